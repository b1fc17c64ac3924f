"""Building a crash-state image: the base image plus the pieces a power-loss model kept.

Images are raw and mostly empty, so everything here walks data extents (`sparse`) and leaves
holes alone: zeros (discards, write-zeroes) are only written where data exists.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from plugpull.files import atomic_path
from plugpull.powerloss.models import Piece
from plugpull.powerloss.writelog import SECTOR, LogEntry, iter_entries
from plugpull.sparse import CHUNK, ZEROS, copy_sparse, data_extents, pwrite_all

def _zero_range(fd: int, start: int, end: int) -> None:
    """Make [start, end) read as zeros, writing only where data is."""
    for data, hole in list(data_extents(fd, start, end)):
        for pos in range(data, hole, CHUNK):
            pwrite_all(fd, ZEROS[:min(CHUNK, hole - pos)], pos)


def _hash_zeros(h, length: int) -> None:
    while length:
        step = min(CHUNK, length)
        h.update(ZEROS[:step])
        length -= step


def image_sha256(path) -> str:
    """sha256 of the image's full contents; holes are hashed as zeros without reading them."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        pos = 0
        for start, end in data_extents(fd, 0, size):
            _hash_zeros(h, start - pos)
            for offset in range(start, end, CHUNK):
                chunk = os.pread(fd, min(CHUNK, end - offset), offset)
                if not chunk:
                    raise OSError(errno.EIO, f"{path} ended early at byte {offset}")
                h.update(chunk)
            pos = end
        _hash_zeros(h, size - pos)
    return h.hexdigest()


DIGEST_BLOCK = 1 << 16


def content_digest(path) -> str:
    """A sha256 that identifies an image's contents in milliseconds for a sparse image: the
    size, then (offset, bytes) of every 64 KiB block that is not all zeros. Holes and zeros
    hash alike, so it depends on the contents only, not on how the file is allocated.
    (image_sha256 gives the plain sha256 of all bytes, at about 0.3 s per 512 MiB.)"""
    h = hashlib.sha256()
    zero_block = ZEROS[:DIGEST_BLOCK]
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        h.update(size.to_bytes(8, "little"))
        offset = 0
        for start, end in data_extents(fd, 0, size):
            offset = max(offset, start - start % CHUNK)
            while offset < end:
                chunk = os.pread(fd, min(CHUNK, size - offset), offset)
                if chunk != ZEROS[:len(chunk)]:
                    for i in range(0, len(chunk), DIGEST_BLOCK):
                        block = chunk[i:i + DIGEST_BLOCK]
                        if block != zero_block[:len(block)]:
                            h.update((offset + i).to_bytes(8, "little"))
                            h.update(block)
                offset += CHUNK
    return h.hexdigest()


def _entries_for(log_path, pieces: list[Piece]) -> dict[int, LogEntry]:
    wanted = {p.entry_index for p in pieces}
    found: dict[int, LogEntry] = {}
    if not wanted:
        return found
    last = max(wanted)
    for e in iter_entries(log_path):
        if e.index in wanted:
            found[e.index] = e
        if e.index >= last:
            break
    missing = wanted - found.keys()
    if missing:
        raise ValueError(f"pieces refer to entries missing from {log_path}: {sorted(missing)[:10]}")
    return found


def _check_piece(piece: Piece, e: LogEntry, image_size: int) -> None:
    if not (e.is_write or e.is_discard):
        raise ValueError(f"piece {piece} refers to entry {e.index}, which neither writes nor discards")
    if piece.nr_sectors < 1 or piece.first_sector < e.sector or \
            piece.first_sector + piece.nr_sectors > e.sector + e.nr_sectors:
        raise ValueError(f"piece {piece} lies outside entry {e.index} "
                         f"(sectors {e.sector}..{e.sector + e.nr_sectors})")
    if (piece.first_sector + piece.nr_sectors) * SECTOR > image_size:
        raise ValueError(f"piece {piece} ends past the image ({image_size} bytes): wrong base image for this log?")


def apply_pieces(image_path, log_path, pieces: Iterable[Piece]) -> None:
    """Apply pieces, in order, to an image in place: log data for writes, zeros for discards."""
    pieces = list(pieces)
    entries = _entries_for(log_path, pieces)
    with open(image_path, "r+b") as img, open(log_path, "rb") as log:
        out, src = img.fileno(), log.fileno()
        size = os.fstat(out).st_size
        for piece in pieces:
            e = entries[piece.entry_index]
            _check_piece(piece, e, size)
            start = piece.first_sector * SECTOR
            end = start + piece.nr_sectors * SECTOR
            if e.is_discard:
                _zero_range(out, start, end)
                continue
            source = e.data_offset + (piece.first_sector - e.sector) * SECTOR
            for pos in range(start, end, CHUNK):
                length = min(CHUNK, end - pos)
                chunk = os.pread(src, length, source + pos - start)
                if len(chunk) != length:
                    raise ValueError(f"log data of entry {e.index} is cut short")
                if chunk == ZEROS[:length]:
                    _zero_range(out, pos, pos + length)
                else:
                    pwrite_all(out, chunk, pos)


def materialize(base_image, log_path, pieces: Iterable[Piece], out_path, digest: bool = True) -> str | None:
    """Write base_image + pieces to out_path atomically; returns the image's sha256 hex
    (None with digest=False: hashing a 512 MiB image costs more than building it).

    The image is built in a temporary file beside out_path and renamed over it, so
    out_path is never seen half-built. Nothing is fsynced: crash states are scratch.
    """
    with atomic_path(Path(out_path)) as tmp:
        copy_sparse(base_image, tmp)
        os.chmod(tmp, stat.S_IMODE(os.stat(base_image).st_mode))
        apply_pieces(tmp, log_path, pieces)
        sha = image_sha256(tmp) if digest else None
    return sha


MAX_DISKS = 8  # recorded disks of one state: the most a stack or extlog takes, with room


@dataclass(frozen=True)
class CrashState:
    """A crash state as the checker takes it: its disk images in the order they were
    recorded: the data disk, then the external log disk (the extlog mode); or a stack's
    member disks."""

    images: tuple[Path, ...]

    def __post_init__(self):
        if not 1 <= len(self.images) <= MAX_DISKS:
            raise ValueError(f"a crash state has 1 to {MAX_DISKS} disk images, not {len(self.images)}")

    @classmethod
    def of(cls, disk: Path, log_disk: Path | None = None) -> "CrashState":
        return cls((Path(disk),) if log_disk is None else (Path(disk), Path(log_disk)))

    @property
    def disk(self) -> Path:
        return self.images[0]

    @property
    def log_disk(self) -> Path | None:
        """The second image: the external log disk, when the state is an extlog one."""
        return self.images[1] if len(self.images) > 1 else None

    def digest(self) -> str:
        """The content digests of its images, in order: what a replay must reproduce."""
        return "".join(content_digest(p) for p in self.images)

    def remove(self) -> None:
        for path in self.images:
            path.unlink(missing_ok=True)
