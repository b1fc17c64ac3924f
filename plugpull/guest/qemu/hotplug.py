"""QMP arguments that plug a disk into a running QEMU guest: pure functions, unit-tested.

A disk goes on the virtio-scsi controller (`bus=scsi.0`) at its own LUN, with the serial
`plugpullN` that the guest finds it by. With `snapshot`, the guest's writes land in a
throwaway qcow2 overlay over the file, which is opened read-only: the file stays
byte-identical, as with `-drive snapshot=on` at boot. With a `write_log`, the disk is recorded
as a disk given at boot is: a blklogwrites node over the raw file logs every write and flush.
"""

import subprocess
from pathlib import Path

from plugpull.errors import InfraError, ToolMissing
from plugpull.guest.contract.config import Bus, DiskSpec

SCSI_BUS = "scsi.0"
# virtio-scsi addresses LUNs up to 16383, but a disk hot-plugged at 256 or above never shows
# up in the guest (seen on 6.1: `disk_missing=256`, after the guest's wait runs out). QEMU
# reports such a LUN in its hot-plug event with the flat-space bit (0x40) in lun[2], and
# Linux's virtio_scsi reads the event's LUN as (lun[2] << 8) | lun[3], past its max_lun. A
# checker guest kept for a long run reaches 256 in a few hundred states, so LUNs wrap there.
MAX_LUN = 255


class Luns:
    """LUNs for hot-plugged disks, handed out in turn and wrapping past MAX_LUN, so that a
    guest kept up for a long run never runs out; a LUN still plugged in is skipped."""

    def __init__(self, first: int):
        self.first = first
        self._next = first
        self._in_use: set[int] = set()

    def take(self) -> int:
        for _ in range(MAX_LUN + 1 - self.first):
            lun = self._next
            self._next = lun + 1 if lun < MAX_LUN else self.first
            if lun not in self._in_use:
                self._in_use.add(lun)
                return lun
        raise ValueError(f"all {MAX_LUN + 1 - self.first} LUNs are plugged in")

    def release(self, lun: int) -> None:
        self._in_use.discard(lun)


def check_pluggable(disk: DiskSpec) -> None:
    if disk.bus is not Bus.SCSI:
        raise ValueError(f"disks are hot-plugged on the virtio-scsi controller, not {disk.bus}")


def _file_node(disk: DiskSpec, read_only: bool) -> dict:
    return {"driver": "host_device" if disk.host_device else "file", "filename": str(disk.path),
            "read-only": read_only, "cache": {"no-flush": not disk.host_flush}}


def blockdev_options(disk: DiskSpec, node: str, overlay: Path | None = None) -> dict:
    """`blockdev-add` arguments: the raw file, or (snapshot) an overlay over it read-only."""
    if disk.write_log:
        return {"driver": "blklogwrites", "node-name": node, "log-sector-size": 512,
                "file": {"driver": "raw", "file": _file_node(disk, read_only=False)},
                "log": {"driver": "file", "filename": str(disk.write_log), "cache": {"no-flush": not disk.host_flush}}}
    if not disk.snapshot:
        return {"driver": "raw", "node-name": node, "file": _file_node(disk, read_only=False)}
    if overlay is None:
        raise ValueError("a snapshot disk needs an overlay file")
    return {
        "driver": "qcow2", "node-name": node,
        "file": {"driver": "file", "filename": str(overlay), "cache": {"no-flush": True}},
        "backing": {"driver": "raw", "read-only": True, "file": _file_node(disk, read_only=True)},
    }


def scsi_device_options(node: str, lun: int, disk: DiskSpec) -> dict:
    """`device_add` arguments: a SCSI disk at `lun`, named by QEMU as the node it reads."""
    return {"driver": "scsi-hd", "id": node, "drive": node, "bus": SCSI_BUS, "channel": 0,
            "scsi-id": 0, "lun": lun, "write-cache": "on" if disk.write_cache else "off",
            "serial": f"plugpull{lun}"}


def create_overlay(backing: Path, overlay: Path) -> Path:
    """An empty qcow2 overlay over a raw image (host side: qemu-img)."""
    argv = ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(Path(backing).resolve()),
            str(overlay)]
    try:
        out = subprocess.run(argv, capture_output=True, text=True)
    except FileNotFoundError:
        raise ToolMissing("qemu-img", "install the Debian package qemu-utils (make deps)") from None
    if out.returncode != 0:
        raise InfraError(f"{' '.join(argv)} failed: {out.stderr.strip()}")
    return overlay
