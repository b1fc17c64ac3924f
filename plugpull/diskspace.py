"""Host disk space: what a run will need, checked before it starts, and running out of it
mid-run reported as the harness failure it is, in one line (`DiskFull`), never a verdict."""

import errno
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from plugpull.errors import DiskFull

MIB = 1 << 20


def nearest_existing(path: Path) -> Path:
    """`path` or its closest ancestor that exists: where a directory yet to be made will live."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(nearest_existing(path)).free


def allocated_bytes(path: Path) -> int:
    """What a (sparse) file occupies on its filesystem."""
    return os.stat(path).st_blocks * 512


def require_free(path: Path, need: int, what: str, hint: str = "") -> None:
    """Refuse, before anything is written, when `path`'s filesystem has less than `need` bytes
    free: a harness failure (exit 3), as running out mid-run is; `hint` says what to do."""
    free = free_bytes(path)
    if free < need:
        raise DiskFull(path, f"{what} needs up to {need / MIB:.0f} MiB, {free / MIB:.0f} MiB free"
                             + (f" ({hint})" if hint else ""))


@contextmanager
def space_is_fatal(where: Path):
    """An ENOSPC inside the block becomes `DiskFull` naming `where`."""
    try:
        yield
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise DiskFull(where) from None
