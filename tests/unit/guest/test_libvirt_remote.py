"""The remote pieces of the libvirt backend without a daemon: the pool's and volumes' XML,
the sparse sections an upload sends, the QEMU user read from a host's capabilities, a
state's disk on a volume, and a pool that goes away even when a step of its removal fails."""

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import libvirt
import pytest

from plugpull.errors import LaunchError
from plugpull.guest.libvirt import devices as libvirt_devices, remote as libvirt_remote
from plugpull.guest.contract.config import Bus, DiskSpec

CAPS = """<capabilities><host>
  <secmodel><model>none</model><doi>0</doi></secmodel>
  <secmodel><model>dac</model><doi>0</doi>
    <baselabel type='kvm'>+64055:+108</baselabel><baselabel type='qemu'>+64055:+108</baselabel></secmodel>
</host></capabilities>"""


class Caps:
    def __init__(self, text):
        self.text = text

    def getCapabilities(self):
        return self.text


def test_the_qemu_user_comes_from_the_hosts_dac_label():
    assert libvirt_remote.qemu_label(Caps(CAPS)) == (64055, 108)
    with pytest.raises(LaunchError, match="DAC label"):
        libvirt_remote.qemu_label(Caps("<capabilities><host/></capabilities>"))


def test_pool_and_volumes_belong_to_the_qemu_user():
    pool = ET.fromstring(libvirt_remote.pool_xml("plugpull-x", "/var/tmp/plugpull-x", (64055, 108)))
    assert pool.get("type") == "dir" and pool.findtext("target/path") == "/var/tmp/plugpull-x"
    assert pool.findtext("target/permissions/owner") == "64055"
    assert pool.findtext("target/permissions/mode") == "0700"
    ro = ET.fromstring(libvirt_remote.volume_xml("kernel", 1 << 29, (64055, 108), writable=False))
    rw = ET.fromstring(libvirt_remote.volume_xml("1-state.img", 1 << 29, (64055, 108), writable=True))
    assert ro.findtext("capacity") == str(1 << 29) and ro.findtext("allocation") == "0"
    assert ro.find("target/format").get("type") == "raw"
    assert (ro.findtext("target/permissions/mode"), rw.findtext("target/permissions/mode")) == ("0400", "0600")


def sections(path: Path) -> list[tuple[bool, int]]:
    """The (data?, length) sections of a file, walked as an upload walks them."""
    out = []
    fd = os.open(path, os.O_RDONLY)
    try:
        while (section := libvirt_remote.next_section(fd))[1]:
            out.append(section)
            os.lseek(fd, section[1], os.SEEK_CUR)
    finally:
        os.close(fd)
    return out


def test_an_upload_sends_the_holes_of_a_sparse_file_as_holes(tmp_path):
    path = tmp_path / "state.img"
    with open(path, "wb") as f:
        f.truncate(64 << 20)
        f.seek(16 << 20)
        f.write(b"x" * 8192)
    found = sections(path)
    assert sum(n for _, n in found) == 64 << 20
    data = [n for is_data, n in found if is_data]
    assert data and sum(data) < 1 << 20, found  # the file system's data granule, not 64 MiB
    assert found[0] == (False, 16 << 20)
    empty = tmp_path / "empty.img"
    empty.write_bytes(b"")
    assert sections(empty) == []


def test_a_state_is_plugged_in_from_its_volume_writable():
    state = DiskSpec(Path("/work/state.img"), Bus.SCSI, True, host_flush=False, snapshot=True)
    root = ET.fromstring(libvirt_devices.volume_disk_xml(state, 2, "sdc", "plugpull-x", "3-state.img"))
    assert root.get("type") == "volume"
    assert root.find("source").attrib == {"pool": "plugpull-x", "volume": "3-state.img"}
    assert root.find("driver").attrib == {"name": "qemu", "type": "raw", "cache": "unsafe"}
    assert root.findtext("serial") == "plugpull2" and root.find("address").get("unit") == "2"
    assert root.find("readonly") is None


class FakePool:
    """A pool whose `fails` steps raise, recording the steps taken."""

    def __init__(self, fails=()):
        self.steps, self.fails = [], set(fails)

    def _step(self, name):
        self.steps.append(name)
        if name in self.fails:
            raise libvirt.libvirtError(f"{name} failed")

    def isActive(self):
        return True

    def listAllVolumes(self):
        return [FakeVolume(self, "a"), FakeVolume(self, "b")]

    def destroy(self):
        self._step("destroy")

    def delete(self, _flags):
        self._step("delete")

    def undefine(self):
        self._step("undefine")


class FakeVolume:
    def __init__(self, pool, name):
        self.pool, self.name = pool, name

    def delete(self, _flags):
        self.pool._step(f"vol-{self.name}")


@pytest.mark.parametrize("fails", [(), ("vol-a", "destroy"), ("delete",)])
def test_a_pool_is_undefined_even_when_a_step_before_fails(fails):
    volumes = libvirt_remote.VolumePool.__new__(libvirt_remote.VolumePool)
    volumes.pool = fake = FakePool(fails)
    volumes.remove()
    assert fake.steps == ["vol-a", "vol-b", "destroy", "delete", "undefine"]
    volumes.remove()
    assert len(fake.steps) == 5, "a second remove touched the pool again"


def test_only_pools_of_a_dead_plugpull_of_this_machine_are_stale():
    names = ["plugpull-abcd1234-100-0f0f0f0f", "plugpull-abcd1234-200-0f0f0f0f",
             "plugpull-ffff0000-100-0f0f0f0f", "default", "plugpull-abcd1234-x-0f"]
    assert libvirt_remote.left_by_the_dead(names, "abcd1234", lambda pid: pid == 200) == [names[0]]
    assert libvirt_remote.left_by_the_dead(names, "abcd1234", lambda pid: True) == []


class PoolsConn:
    def __init__(self, pools: dict):
        self.pools = pools

    def listAllStoragePools(self):
        return [type("P", (), {"name": lambda self, n=n: n})() for n in self.pools]

    def storagePoolLookupByName(self, name):
        return self.pools[name]


def test_a_sweep_removes_the_pools_of_the_dead_and_keeps_ours(monkeypatch):
    here = libvirt_remote.origin()
    dead = 2 ** 22 + 12345  # above pid_max's default: no such process
    ours = libvirt_remote.pool_name()
    pools = {f"plugpull-{here}-{dead}-00aa": FakePool(), ours: FakePool()}
    assert libvirt_remote.sweep_stale_pools(PoolsConn(pools)) == [f"plugpull-{here}-{dead}-00aa"]
    assert pools[f"plugpull-{here}-{dead}-00aa"].steps[-1] == "undefine"
    assert pools[ours].steps == []
