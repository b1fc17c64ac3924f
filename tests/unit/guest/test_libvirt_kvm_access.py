"""The check that libvirt's QEMU user can open /dev/kvm (without it libvirtd probes QEMU again on
every lookup and a guest takes about a minute longer to start)."""

import grp
import os
import pwd

import pytest

from plugpull.guest.libvirt import kvmaccess
from plugpull.guest.libvirt.kvmaccess import can_open, kvm_denied, qemu_user


def test_qemu_user_is_the_last_uncommented_user_line_else_debians(tmp_path):
    conf = tmp_path / "qemu.conf"
    conf.write_text('#user = "root"\nuser = "first"\n  user = "alice"\ngroup = "kvm"\n')
    assert qemu_user(conf) == "alice"
    conf.write_text('#user = "root"\n')
    assert qemu_user(conf) == "libvirt-qemu"
    assert qemu_user(tmp_path / "absent.conf") == "libvirt-qemu"


@pytest.mark.parametrize("mode, owner, group, uid, groups, ok", [
    (0o660, 0, 107, 64055, {107}, True),        # in the device's group
    (0o660, 0, 103, 64055, {107, 64055}, False),  # the group is another one
    (0o600, 64055, 103, 64055, set(), True),     # owns it
    (0o060, 64055, 103, 64055, {103}, False),    # owner bits decide for the owner
    (0o666, 0, 103, 64055, set(), True),         # anyone may
    (0o640, 0, 107, 64055, {107}, False),        # the group may only read
    (0o000, 5, 5, 0, set(), True),               # root
])
def test_can_open_follows_the_permission_bits(mode, owner, group, uid, groups, ok):
    assert can_open(mode, owner, group, uid, groups) is ok


def _a_user_and_a_group_it_is_not_in():
    me = pwd.getpwuid(os.getuid())
    for entry in pwd.getpwall():
        if entry.pw_uid == 0:
            continue
        theirs = {entry.pw_gid} | {g.gr_gid for g in grp.getgrall() if entry.pw_name in g.gr_mem}
        other = next((g for g in grp.getgrall() if g.gr_gid not in theirs), None)
        if other is not None:
            return entry.pw_name, entry.pw_gid, other.gr_gid
    pytest.skip(f"no user other than root with a group it is not in on this host ({me.pw_name})")


@pytest.mark.skipif(os.getuid() != 0, reason="making a device node needs root")
def test_a_device_of_a_group_the_user_is_not_in_is_said_with_the_cost_and_the_fix(tmp_path):
    user, own_gid, other_gid = _a_user_and_a_group_it_is_not_in()
    conf = tmp_path / "qemu.conf"
    conf.write_text(f'user = "{user}"\n')
    device = tmp_path / "kvm"
    os.mknod(device, 0o660 | 0o020000, os.makedev(1, 3))  # a character device, as /dev/kvm is
    os.chown(device, 0, other_gid)
    os.chmod(device, 0o660)
    said = kvm_denied(device, conf)
    assert said is not None and f"QEMU user {user} cannot open {device}" in said
    assert grp.getgrgid(other_gid).gr_name in said and "mode 660" in said and "minute" in said
    os.chown(device, 0, own_gid)
    assert kvm_denied(device, conf) is None


def test_no_device_a_file_or_an_unknown_user_says_nothing(tmp_path):
    conf = tmp_path / "qemu.conf"
    conf.write_text('user = "no-such-user-plugpull"\n')
    assert kvm_denied(tmp_path / "absent", conf) is None
    plain = tmp_path / "kvm"
    plain.write_text("")
    assert kvm_denied(plain, tmp_path / "default.conf") is None
    assert kvm_denied(kvmaccess.KVM, conf) is None
