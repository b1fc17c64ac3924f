"""Disks that stay plugged into a hot checker guest, each given the next crash state's bytes.

Under TCG, plugging a state's disk in and out costs the checker's QEMU about 0.09 CPU seconds
a state (a qcow2 overlay, QMP's blockdev-add and device_add, the guest's SCSI scan, the
unplug), three times a warm mount, tree read and unmount of a small image
(bench/plug_cost.py). A hunt checks states of one size, so each hot guest keeps a few raw
disks of that size plugged in for its life (`Slots`) and the host copies each state into
one (sparse, in place: QEMU's raw driver reads the file through the host's page cache,
which sees the copy at once). Before the guest mounts a slot again, it drops what its page
cache holds of that disk (`blockdev --flushbufs`), so the state is read from the disk and
nothing of the state before it is seen. The guest's recovery writes go to the slot, never to
the state's file, which stays as it was built; the host's fsck then reads the slot file
itself, with no export through QEMU.
"""

import os
import shlex
from pathlib import Path

from plugpull.guest.contract.config import Bus, DiskSpec
from plugpull.sparse import copy_sparse


class Slots:
    """`count` raw disks of `size` bytes plugged into `machine`, their files in `scratch`."""

    def __init__(self, machine, scratch: Path, size: int, count: int):
        self.size, self.paths, self.disks = size, [], []
        for k in range(count):
            path = scratch / f"slot{k}.img"
            with open(path, "wb") as f:
                f.truncate(size)
            self.paths.append(path)
            self.disks.append(machine.attach_disk(DiskSpec(path, Bus.SCSI, True, host_flush=False), wait=True))

    def fits(self, images: list[Path]) -> bool:
        """Whether these states' images can go into the slots at once."""
        return len(images) <= len(self.paths) and all(os.path.getsize(image) == self.size for image in images)

    def fill(self, images: list[Path]) -> list[int]:
        """Each image's bytes into a slot, in order; the slots' LUNs."""
        for image, path in zip(images, self.paths):
            copy_sparse(image, path)
        return [lun(disk.serial) for disk in self.disks[:len(images)]]

    def forget_command(self, count: int) -> str:
        """The guest shell that drops its cached blocks of the first `count` slots."""
        names = " ".join(shlex.quote(disk.device) for disk in self.disks[:count])
        return f"for d in {names}; do blockdev --flushbufs /dev/$d || exit 1; done; "


def lun(serial: str) -> int:
    """The LUN of a disk plugged in by `attach_disk`: both backends name it plugpullLUN."""
    if not serial.startswith("plugpull") or not serial[8:].isdigit():
        raise ValueError(f"not a hot-plugged disk: {serial!r}")
    return int(serial[8:])
