"""The QMP arguments that plug a disk into a running guest: no VM."""

from pathlib import Path

import pytest

from plugpull.guest.config import Bus, DiskSpec
from plugpull.guest import hotplug
from plugpull.guest.hotplug import blockdev_options, check_pluggable, scsi_device_options

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


@pytest.mark.parametrize("disk", [DiskSpec(STATE, Bus.AHCI), DiskSpec(STATE, Bus.SCSI, write_log=Path("/w.log"))])
def test_only_unrecorded_scsi_disks_are_pluggable(disk):
    with pytest.raises(ValueError):
        check_pluggable(disk)


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


def test_a_long_run_of_plug_and_unplug_never_runs_out_of_luns():
    luns = hotplug.Luns(first=1)
    for _ in range(3 * hotplug.MAX_LUN):
        luns.release(luns.take())
