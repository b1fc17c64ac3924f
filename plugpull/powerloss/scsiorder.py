"""Flushes issued with writes in flight, per disk, from a QEMU trace of a virtio-scsi controller.

SCSI's SYNCHRONIZE CACHE is a queued command: unlike ATA's FLUSH CACHE (flushorder.py), the
guest may send it while writes are still in flight, and a flush covers only the writes that
had completed when it was issued. The write log cannot say which those were (it is in
completion order), the controller's trace events can:

    virtio_scsi_cmd_req  virtio_scsi_cmd_req lun=L tag=0xT cmd=0xC      a command issued
    virtio_scsi_cmd_resp virtio_scsi_cmd_resp lun=L tag=0xT response=R  it completed

(QEMU's `log` trace backend; lines may carry a `PID@SECONDS:` prefix.) Disks come and go
(a hunt plugs one in per workload, and LUNs are reused): a disk starts at the first INQUIRY
on its LUN after that LUN saw I/O, the guest's scan of a newly plugged disk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from plugpull.powerloss.flushorder import TraceFormatError

TRACE_EVENTS = ("virtio_scsi_cmd_req", "virtio_scsi_cmd_resp")
WRITES = frozenset({0x2A, 0x8A, 0xAA})
"""WRITE(10), WRITE(16), WRITE(12)."""
FLUSHES = frozenset({0x35, 0x91})
"""SYNCHRONIZE CACHE(10) and (16)."""
INQUIRY = 0x12

_EVENT = re.compile(r"^(?:\d+@[\d.]+:)?(virtio_scsi_cmd_req|virtio_scsi_cmd_resp) (.*)$")
_REQ = re.compile(r"lun=(\d+) tag=(0x[0-9a-fA-F]+) cmd=(0x[0-9a-fA-F]+)")
_RESP = re.compile(r"lun=(\d+) tag=(0x[0-9a-fA-F]+) response=")


@dataclass
class DiskFlushes:
    """One plugged-in disk: its LUN, and for each flush in issue order the number of writes
    still in flight when it was issued."""

    lun: int
    flushes: list[int] = field(default_factory=list)
    writes: int = 0
    in_flight: set[str] = field(default_factory=set, repr=False)

    @property
    def crossed(self) -> list[int]:
        """The flushes (numbered from 1) issued while a write was in flight."""
        return [n for n, writing in enumerate(self.flushes, 1) if writing]

    @property
    def busy(self) -> bool:
        return bool(self.writes or self.flushes)


def disk_flushes(lines: Iterable[str]) -> list[DiskFlushes]:
    """Every disk the trace shows, in the order they appeared, with its flushes."""
    disks: list[DiskFlushes] = []
    at_lun: dict[int, DiskFlushes] = {}
    for line in lines:
        match = _EVENT.match(line.strip())
        if match is None:
            continue
        event, rest = match.groups()
        if event == "virtio_scsi_cmd_resp":
            lun, tag = _fields(_RESP, rest)
            if lun in at_lun:
                at_lun[lun].in_flight.discard(tag)
            continue
        lun, tag, cmd = _fields(_REQ, rest)
        command = int(cmd, 16)
        disk = at_lun.get(lun)
        if disk is None or (command == INQUIRY and disk.busy):
            disk = at_lun[lun] = DiskFlushes(lun)
            disks.append(disk)
        if command in WRITES:
            disk.writes += 1
            disk.in_flight.add(tag)
        elif command in FLUSHES:
            disk.flushes.append(len(disk.in_flight))
    return disks


def _fields(pattern: re.Pattern, rest: str) -> tuple:
    found = pattern.search(rest)
    if found is None:
        raise TraceFormatError(f"not a virtio-scsi command event: {rest!r}")
    lun, *others = found.groups()
    return (int(lun), *others)
