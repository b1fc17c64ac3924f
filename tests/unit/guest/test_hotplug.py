"""The QMP arguments that plug a disk into a running guest: no VM."""

from pathlib import Path

import pytest

from plugpull.guest.contract.config import Bus, DiskSpec
from plugpull.guest.qemu import hotplug
from plugpull.guest.qemu.hotplug import blockdev_options, check_pluggable, scsi_device_options

STATE = Path("/srv/states/state.img")


def test_snapshot_disk_reads_its_file_under_an_overlay():
    opts = blockdev_options(DiskSpec(STATE, Bus.SCSI, snapshot=True), "hotdisk3", Path("/tmp/o.qcow2"))
    assert (opts["driver"], opts["node-name"], opts["file"]["filename"]) == ("qcow2", "hotdisk3", "/tmp/o.qcow2")
    backing = opts["backing"]
    assert backing["read-only"] and backing["file"]["read-only"]
    assert backing["file"]["filename"] == str(STATE)


def test_plain_disk_is_written_through():
    opts = blockdev_options(DiskSpec(STATE, Bus.SCSI, host_flush=False), "hotdisk1")
    assert opts["driver"] == "raw" and "backing" not in opts
    assert opts["file"] == {"driver": "file", "filename": str(STATE), "read-only": False,
                            "cache": {"no-flush": True}}


def test_snapshot_without_overlay_is_refused():
    with pytest.raises(ValueError):
        blockdev_options(DiskSpec(STATE, Bus.SCSI, snapshot=True), "hotdisk1")


@pytest.mark.parametrize("wc", [True, False])
def test_device_sits_at_its_lun_with_its_serial_and_cache(wc):
    dev = scsi_device_options("hotdisk5", 5, DiskSpec(STATE, Bus.SCSI, write_cache=wc))
    assert (dev["driver"], dev["bus"], dev["lun"], dev["serial"]) == ("scsi-hd", "scsi.0", 5, "plugpull5")
    assert dev["drive"] == dev["id"] == "hotdisk5"
    assert dev["write-cache"] == ("on" if wc else "off")


def test_only_scsi_disks_are_pluggable():
    with pytest.raises(ValueError):
        check_pluggable(DiskSpec(STATE, Bus.AHCI))
    check_pluggable(DiskSpec(STATE, Bus.SCSI, write_log=Path("/w.log")))


def test_recorded_disk_logs_through_blklogwrites_over_the_raw_file():
    opts = blockdev_options(DiskSpec(STATE, Bus.SCSI, host_flush=False, write_log=Path("/w.log")), "hotdisk2")
    assert (opts["driver"], opts["node-name"], opts["log-sector-size"]) == ("blklogwrites", "hotdisk2", 512)
    assert opts["file"]["driver"] == "raw" and opts["file"]["file"]["filename"] == str(STATE)
    assert opts["log"] == {"driver": "file", "filename": "/w.log", "cache": {"no-flush": True}}


def test_luns_wrap_past_the_last_and_skip_those_plugged_in():
    luns = hotplug.Luns(first=2)
    first = luns.take()
    taken = [luns.take() for _ in range(hotplug.MAX_LUN - 2)]
    assert first == 2 and taken[-1] == hotplug.MAX_LUN
    luns.release(5)
    assert luns.take() == 5  # wrapped: 2, 3, 4 are still plugged in
    with pytest.raises(ValueError, match="LUNs are plugged in"):
        luns.take()
    luns.release(3)
    assert luns.take() == 3


def test_hot_plugged_luns_stay_below_256_which_the_guest_does_not_find():
    luns = hotplug.Luns(first=1)
    assert max(luns.take() for _ in range(hotplug.MAX_LUN)) == 255
    with pytest.raises(ValueError):
        luns.take()


def test_a_long_run_of_plug_and_unplug_never_runs_out_of_luns():
    """Each LUN is handed out in turn, wrapping from the last to the first; one given back is
    free again, so after the run every LUN can be plugged in at once."""
    luns = hotplug.Luns(first=1)
    taken = []
    for _ in range(3 * hotplug.MAX_LUN):
        taken.append(luns.take())
        luns.release(taken[-1])
    assert taken == list(range(1, hotplug.MAX_LUN + 1)) * 3
    assert sorted(luns.take() for _ in range(hotplug.MAX_LUN)) == list(range(1, hotplug.MAX_LUN + 1))


class _Events:
    """A QMP connection that only hands out the events it was given, then none."""

    def __init__(self, events):
        self.events, self.sent = list(events), []

    def pull_event(self, wait=None):
        return self.events.pop(0) if self.events else None

    def cmd(self, name, **arguments):
        self.sent.append((name, arguments))
        return {}


def _unlaunched(monkeypatch, events):
    from plugpull.guest.qemu import machine
    from plugpull.guest.contract.config import Accel, MachineSpec
    monkeypatch.setattr(machine, "UNPLUG_TIMEOUT", 0.2)
    m = machine.Machine(MachineSpec(scsi_controller=True), image=None, accel=Accel.TCG)
    m.qmp = _Events(events)
    return m


def test_several_disks_unplug_at_once_whatever_order_qemu_reports_them_in(monkeypatch):
    from plugpull.guest.contract.backend import AttachedDisk
    deleted = [{"event": "DEVICE_DELETED", "data": {"device": d}} for d in ("hotdisk2", "other", "hotdisk1")]
    m = _unlaunched(monkeypatch, deleted)
    m._luns.take(), m._luns.take()
    m.detach_disks([AttachedDisk("hotdisk1", "plugpull1", ""), AttachedDisk("hotdisk2", "plugpull2", "")])
    assert [name for name, _ in m.qmp.sent] == ["device_del", "device_del", "blockdev-del", "blockdev-del"]


def test_a_disk_qemu_never_reports_unplugged_is_a_guest_error_that_names_it(monkeypatch):
    from plugpull.errors import GuestError
    from plugpull.guest.contract.backend import AttachedDisk
    m = _unlaunched(monkeypatch, [{"event": "DEVICE_DELETED", "data": {"device": "hotdisk1"}}])
    with pytest.raises(GuestError, match="DEVICE_DELETED for hotdisk2"):
        m.detach_disks([AttachedDisk("hotdisk1", "plugpull1", ""), AttachedDisk("hotdisk2", "plugpull2", "")])
    assert [name for name, _ in m.qmp.sent] == ["device_del", "device_del"], "no blockdev-del before QEMU let go"
