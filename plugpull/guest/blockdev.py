"""Whether a host block device is in use, asked of the kernel rather than of device names.

A name in /proc/mounts misses a device's other nodes (a symlink, a second mknod), the
device-mapper and md devices built on it, and swap. The kernel knows: an exclusive open
(O_EXCL on a block device) fails with EBUSY while anything has it claimed (a mount, swap, a
dm or md device, another exclusive opener), and sysfs lists each device built on it in its
`holders` directory, and in its partitions' ones.
"""

import errno
import os
from pathlib import Path

SYS_DEV_BLOCK = Path("/sys/dev/block")


def sysfs_dir(device: Path) -> Path:
    """The device's directory in sysfs, found by its major:minor, whatever node names it."""
    rdev = os.stat(device).st_rdev
    return (SYS_DEV_BLOCK / f"{os.major(rdev)}:{os.minor(rdev)}").resolve()


def holders(device: Path) -> list[str]:
    """Kernel names of the devices built on this one or on its partitions (dm-0, md127...)."""
    top = sysfs_dir(device)
    found = []
    for part in [top, *sorted(p for p in top.iterdir() if (p / "partition").is_file())]:
        held = part / "holders"
        if held.is_dir():
            found += [f"{h.name} on {part.name}" if part != top else h.name for h in sorted(held.iterdir())]
    return found


def claimed(device: Path) -> bool:
    """Whether the kernel refuses an exclusive open: something has the device (or, for a
    whole disk, one of its partitions) claimed."""
    try:
        fd = os.open(device, os.O_RDONLY | os.O_EXCL)
    except OSError as e:
        if e.errno == errno.EBUSY:
            return True
        raise
    os.close(fd)
    return False


def in_use(device: Path) -> str:
    """Why the device is in use, or "" if nothing holds it."""
    held = holders(device)
    if held:
        return f"held by {', '.join(held)}"
    if claimed(device):
        return "the kernel refuses an exclusive open: mounted, swap, or held by another program"
    return ""
