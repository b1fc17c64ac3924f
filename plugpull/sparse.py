"""Sparse raw images: their data extents walked with SEEK_DATA/SEEK_HOLE, holes left alone.

Copying a fresh 512 MiB image costs a few system calls: only the extents that may hold data
are copied (copy_file_range, or read and written where the kernel will not), and a chunk of
zeros read on the way stays a hole.
"""

import errno
import os
from typing import Iterator

CHUNK = 1 << 20
ZEROS = bytes(CHUNK)
COPY_FALLBACK_ERRNOS = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM, errno.EBADF}


def data_extents(fd: int, start: int, end: int) -> Iterator[tuple[int, int]]:
    """(from, to) byte ranges within [start, end) that may hold data; holes are skipped.

    Without SEEK_DATA support the whole range is reported as data.
    """
    if not hasattr(os, "SEEK_DATA"):
        if start < end:
            yield start, end
        return
    pos = start
    while pos < end:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as err:
            if err.errno == errno.ENXIO:
                return
            if err.errno == errno.EINVAL and pos == start:
                yield start, end
                return
            raise
        if data >= end:
            return
        hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
        yield data, hole
        pos = hole


def _copy_by_reading(src: int, dst: int, start: int, end: int) -> None:
    """Plain copy that still skips all-zero chunks; dst must already hold holes there."""
    pos = start
    while pos < end:
        chunk = os.pread(src, min(CHUNK, end - pos), pos)
        if not chunk:
            raise OSError(errno.EIO, f"source ended at byte {pos}, expected {end}")
        if chunk != ZEROS[:len(chunk)]:
            pwrite_all(dst, chunk, pos)
        pos += len(chunk)


def _copy_range(src: int, dst: int, start: int, end: int) -> None:
    pos = start
    if hasattr(os, "copy_file_range"):
        try:
            while pos < end:
                copied = os.copy_file_range(src, dst, end - pos, pos, pos)
                if copied == 0:
                    break
                pos += copied
        except OSError as err:
            if err.errno not in COPY_FALLBACK_ERRNOS:
                raise
    _copy_by_reading(src, dst, pos, end)


def pwrite_all(fd: int, data, offset: int) -> None:
    """All of `data` written at `offset` (one pwrite may write less)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


def copy_sparse(src, dst) -> None:
    """Copy a raw image to dst (replacing it), keeping its holes and its size."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        os.ftruncate(fout.fileno(), size)
        for start, end in data_extents(fin.fileno(), 0, size):
            _copy_range(fin.fileno(), fout.fileno(), start, end)
