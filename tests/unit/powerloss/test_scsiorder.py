import pytest

from plugpull.powerloss.flushorder import TraceFormatError
from plugpull.powerloss.scsiorder import disk_flushes


def req(lun, tag, cmd):
    return f"virtio_scsi_cmd_req virtio_scsi_cmd_req lun={lun} tag={tag:#x} cmd={cmd:#x}"


def resp(lun, tag):
    return f"virtio_scsi_cmd_resp virtio_scsi_cmd_resp lun={lun} tag={tag:#x} response=0 status=0x0"


def write(lun, tag):
    return req(lun, tag, 0x2A)


def flush(lun, tag):
    return req(lun, tag, 0x35)


def test_a_write_that_completed_before_the_flush_does_not_cross_it():
    [disk] = disk_flushes([write(0, 1), resp(0, 1), flush(0, 2), resp(0, 2)])
    assert (disk.flushes, disk.crossed, disk.writes) == ([0], [], 1)


def test_a_write_still_in_flight_when_the_flush_is_issued_crosses_it():
    lines = [write(0, 1), resp(0, 1), flush(0, 2), resp(0, 2),   # the setup's flush
             write(0, 3), resp(0, 3), write(0, 4), flush(0, 5), resp(0, 4), resp(0, 5)]
    [disk] = disk_flushes(lines)
    assert (disk.flushes, disk.crossed) == ([0, 1], [2])


def test_each_lun_is_its_own_disk():
    disks = disk_flushes([write(0, 1), write(1, 1), resp(1, 1), flush(0, 2), flush(1, 2)])
    assert [(d.lun, d.crossed) for d in disks] == [(0, [1]), (1, [])]


def test_an_inquiry_after_io_starts_a_new_disk_at_that_lun():
    scan = req(3, 9, 0x12)
    lines = [scan, req(3, 10, 0x12), write(3, 1), flush(3, 2), resp(3, 1), resp(3, 2),
             scan, write(3, 1), resp(3, 1), flush(3, 2)]
    first, second = disk_flushes(lines)
    assert (first.crossed, second.crossed, second.writes) == ([1], [], 1)


def test_reads_timestamps_and_other_events_are_skipped():
    lines = [f"77@1700000000.5:{req(0, 1, 0x28)}", "scsi_req_parsed target 0 lun 0 tag 1 command 40",
             "", flush(0, 2)]
    [disk] = disk_flushes(lines)
    assert (disk.writes, disk.flushes) == (0, [0])


def test_an_unreadable_command_event_is_refused():
    with pytest.raises(TraceFormatError, match="virtio-scsi"):
        disk_flushes(["virtio_scsi_cmd_req virtio_scsi_cmd_req lun=0 garbled"])
