"""Whether the user libvirt runs QEMU as can open /dev/kvm.

libvirtd keeps each QEMU binary's capabilities in a cache and checks the cache on every
lookup. libvirt 9 deems it outdated when QEMU reported KVM at probe time but /dev/kvm is
not readable and writable by QEMU's user (qemu.conf's `user`): it then probes every QEMU
binary again, seconds each, several times per domain start. On a host whose /dev/kvm
belongs to a group that user is not in (a container's device node often does), a guest
measured 80 s to start under TCG, and 11 s once the user could open the device. Nothing
fails: it is only slow, so plugpull says so (`doctor`, and a warning when libvirt is used).

The check reads the device's owner, group and mode (no ACLs) and the user's groups.
"""

import grp
import os
import pwd
import re
import stat
from pathlib import Path

KVM = Path("/dev/kvm")
QEMU_CONF = Path("/etc/libvirt/qemu.conf")
DEFAULT_USER = "libvirt-qemu"  # Debian's build of libvirt runs QEMU as this user
_USER_LINE = re.compile(r'^\s*user\s*=\s*"([^"]+)"', re.MULTILINE)


def qemu_user(conf: Path = QEMU_CONF) -> str:
    """The user qemu.conf names (a `+UID` names one by number), else Debian's default."""
    try:
        named = _USER_LINE.findall(conf.read_text())
    except OSError:
        named = []
    return named[-1] if named else DEFAULT_USER


def _account(user: str) -> tuple[int, set[int]] | None:
    try:
        entry = pwd.getpwuid(int(user[1:])) if user.startswith("+") else pwd.getpwnam(user)
    except (KeyError, ValueError):
        return None
    groups = {entry.pw_gid} | {g.gr_gid for g in grp.getgrall() if entry.pw_name in g.gr_mem}
    return entry.pw_uid, groups


def can_open(mode: int, owner: int, group: int, uid: int, groups: set[int]) -> bool:
    """Read and write access as the permission bits give it (root has it always)."""
    if uid == 0:
        return True
    if uid == owner:
        return mode & 0o600 == 0o600
    if group in groups:
        return mode & 0o060 == 0o060
    return mode & 0o006 == 0o006


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def kvm_denied(device: Path = KVM, conf: Path = QEMU_CONF) -> str | None:
    """One line saying that QEMU's user cannot open the KVM device and what that costs, or
    None when it can, or when there is no device or no such user to tell by."""
    try:
        info = os.stat(device)
    except OSError:
        return None
    user = qemu_user(conf)
    account = _account(user)
    if not stat.S_ISCHR(info.st_mode) or account is None:
        return None
    if can_open(info.st_mode, info.st_uid, info.st_gid, *account):
        return None
    group = _group_name(info.st_gid)
    return (f"libvirt's QEMU user {user} cannot open {device} (group {group}, mode "
            f"{stat.S_IMODE(info.st_mode):o}): libvirtd probes QEMU again on every lookup, which adds "
            f"about a minute to each guest start; let {user} open it (add it to group {group}, or "
            f"give {device} a group it is in)")
