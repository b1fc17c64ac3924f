"""The write log: QEMU's `blklogwrites` format (the dm-log-writes on-disk layout).

Layout, all integers little-endian:

    offset 0        superblock {magic u64, version u64, nr_entries u64, sectorsize u32},
                    zero-padded to one log sector
    log sector 1..  entries, back to back; each is a header {sector u64, nr_sectors u64,
                    flags u64, data_len u64} zero-padded to one log sector, then, unless it
                    is a discard, nr_sectors log sectors of data

What QEMU's block/blklogwrites.c does (read in an 8.x copy; its logging logic is the one
7.2 has: only locking annotations differ), and what the reader therefore assumes:

- Units. `sector` and `nr_sectors` are in *log* sectors (`offset >> log-sector-bits`), not
  512-byte sectors; the log sector size is the superblock's `sectorsize` (QEMU's
  `log-sector-size`, default 512, also forced as the node's request alignment, so every
  logged request is aligned to it). Linux dm-log-writes uses the device's logical block
  size the same way. LogEntry converts both to 512-byte units.
- data_len is always 0 in QEMU's entries; the data length is nr_sectors log sectors.
  Only dm-log-writes marks use data_len: the mark text sits inside the header sector
  right after the 32-byte header, and such an entry has no data sectors.
- Discards log a header only (the range, no data). Write-zeroes is logged as a plain
  write (flags 0) whose data region is zeroed in the log, so it reads back as zeros.
- Ordering. For each request QEMU first performs it on the image (write, discard or
  flush), and only when that completes appends the log entry (header and data in one
  write; write-zeroes zeroes its region as a second step), then completes the request
  to the guest. So log order is completion order,
  an entry is in the log before the guest sees the ack, and a FLUSH entry is appended
  *after* the underlying flush has finished. The log position is reserved before the
  log write is issued, so with concurrent requests a later entry can land while an
  earlier one is still unwritten: a kill can leave a hole (zeros) inside the tail.
- Flushes: entry {sector 0, nr_sectors 0, flags FLUSH}. QEMU never sets the FUA flag: a
  FUA request (e.g. every write when the device's write cache is off) is emulated by
  the block layer as the write followed by a flush, so it appears as a write entry and a
  FLUSH entry. A flush with no write since the previous one is not logged, and a
  blklogwrites node itself opened with cache.no-flush=on logs no flushes at all (on its
  file children that option only skips the host fsync).
- Superblock. QEMU does not write it when it opens a new log; it rewrites it (then
  flushes the log file) after logging a FLUSH entry and after every
  `log-super-update-interval` entries (default 4096). Until then offset 0 holds zeros,
  and afterwards nr_entries usually lags the real count. The reader therefore walks
  entries past nr_entries and stops at the first entry that is incomplete or not
  plausible; an all-zero superblock is accepted as "not written yet".
- QEMU does not truncate an existing log file without log-append: a reused file keeps
  stale entries after the new ones, which this reader cannot tell apart. Use a fresh file.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import BinaryIO, Iterator

MAGIC = 0x6A736677736872
VERSION = 1

FLUSH = 1
FUA = 2
DISCARD = 4
MARK = 8
METADATA = 16
"""dm-log-writes' REQ_META hint; QEMU never sets it. Accepted and otherwise ignored."""

KNOWN_FLAGS = FLUSH | FUA | DISCARD | MARK | METADATA

SECTOR = 512
SUPER = struct.Struct("<QQQI")
HEADER = struct.Struct("<QQQQ")
MAX_SECTOR_SIZE = 1 << 24


class LogFormatError(ValueError):
    """The file is not a write log this reader can use."""


@dataclass(frozen=True)
class Superblock:
    version: int
    nr_entries: int
    sector_size: int
    written: bool = True
    """False when offset 0 is still zeros (QEMU has not flushed yet); sector_size is then assumed."""


@dataclass(frozen=True)
class LogEntry:
    """One logged request.

    sector and nr_sectors are in 512-byte units of the guest disk. data_offset and data_len
    locate its data in the log: a write's data, a mark's text, nothing for a flush or a
    discard (whose data_offset is then where the next entry starts).
    """

    index: int
    sector: int
    nr_sectors: int
    flags: int
    data_offset: int
    data_len: int
    log_sector_size: int = SECTOR

    @property
    def is_flush(self) -> bool:
        return bool(self.flags & FLUSH)

    @property
    def is_fua(self) -> bool:
        return bool(self.flags & FUA)

    @property
    def is_discard(self) -> bool:
        return bool(self.flags & DISCARD)

    @property
    def is_mark(self) -> bool:
        return bool(self.flags & MARK)

    @property
    def is_write(self) -> bool:
        return self.nr_sectors > 0 and not (self.flags & (DISCARD | MARK))

    @property
    def header_offset(self) -> int:
        inline = HEADER.size if self.is_mark else self.log_sector_size
        return self.data_offset - inline

    @property
    def end_offset(self) -> int:
        after_header = self.header_offset + self.log_sector_size
        return after_header + (self.data_len if self.is_write else 0)


@dataclass(frozen=True)
class LogSummary:
    entries: int
    writes: int
    flushes: int
    fua: int
    discards: int
    bytes_written: int
    log_bytes: int
    torn_tail: bool
    """Bytes follow the last complete entry: a cut-off entry, a hole, or garbage."""
    marks: int = 0
    super_entries: int = 0
    sector_size: int = SECTOR


def _check_sector_size(size: int) -> None:
    if size < SECTOR or size >= MAX_SECTOR_SIZE or size & (size - 1):
        raise LogFormatError(
            f"log sector size {size} is unusable: it must be a power of two from 512 up "
            "(plugpull addresses the guest disk in 512-byte sectors)")


def read_superblock(f: BinaryIO, sector_size: int = SECTOR) -> Superblock:
    """Read the superblock at offset 0.

    `sector_size` is only the assumption used when the superblock is still all zeros.
    """
    f.seek(0)
    raw = f.read(SUPER.size)
    if len(raw) < SUPER.size or not any(raw):
        if any(raw):
            raise LogFormatError("log is shorter than its superblock")
        _check_sector_size(sector_size)
        return Superblock(VERSION, 0, sector_size, written=False)
    magic, version, nr_entries, size = SUPER.unpack(raw)
    if magic != MAGIC:
        raise LogFormatError(f"bad log magic {magic:#x} (expected {MAGIC:#x}): not a blklogwrites log")
    if version != VERSION:
        raise LogFormatError(f"unsupported log version {version}")
    _check_sector_size(size)
    return Superblock(version, nr_entries, size)


@dataclass
class _Scan:
    """Where a walk over the entries stopped, filled in as it goes."""

    superblock: Superblock | None = None
    file_size: int = 0
    end: int = 0
    complete: bool = False


def _parse_header(block: bytes, size: int) -> tuple[int, int, int, int] | None:
    """The header's fields, or None when the block is not a plausible entry header."""
    sector, nr, flags, data_len = HEADER.unpack_from(block)
    if not (sector or nr or flags or data_len):
        return None
    if flags & ~KNOWN_FLAGS:
        return None
    if flags & MARK:
        inline_end = HEADER.size + data_len
        if flags & (FLUSH | FUA | DISCARD) or nr or inline_end > size:
            return None
        padding = block[inline_end:]
    else:
        if nr == 0 and not flags & FLUSH:
            return None
        if flags & DISCARD and flags & (FLUSH | FUA):
            return None
        if data_len and (flags & DISCARD or data_len != nr * size):
            return None
        padding = block[HEADER.size:]
    if any(padding):
        return None
    return sector, nr, flags, data_len


def _walk(f: BinaryIO, scan: _Scan, sector_size: int) -> Iterator[LogEntry]:
    sb = read_superblock(f, sector_size)
    size = sb.sector_size
    file_size = _file_size(f)
    scan.superblock, scan.file_size = sb, file_size
    ratio = size // SECTOR
    offset = size
    index = 0
    while True:
        scan.end = offset
        if offset + size > file_size:
            break
        f.seek(offset)
        block = f.read(size)
        fields = _parse_header(block, size) if len(block) == size else None
        if fields is None:
            break
        sector, nr, flags, data_len = fields
        if flags & MARK:
            entry = LogEntry(index, sector * ratio, 0, flags, offset + HEADER.size, data_len, size)
        else:
            stored = 0 if flags & DISCARD else nr * size
            if offset + size + stored > file_size:
                break
            entry = LogEntry(index, sector * ratio, nr * ratio, flags, offset + size, stored, size)
        yield entry
        offset = entry.end_offset
        index += 1
    scan.complete = scan.end >= file_size


def _file_size(f: BinaryIO) -> int:
    try:
        return os.fstat(f.fileno()).st_size
    except (AttributeError, OSError):
        return f.seek(0, os.SEEK_END)


def _open(path_or_file):
    if hasattr(path_or_file, "read"):
        return path_or_file, False
    return open(path_or_file, "rb"), True


def _scan_entries(path_or_file, scan: _Scan, sector_size: int = SECTOR) -> Iterator[LogEntry]:
    f, owned = _open(path_or_file)
    try:
        yield from _walk(f, scan, sector_size)
    finally:
        if owned:
            f.close()


def iter_entries(path_or_file, sector_size: int = SECTOR) -> Iterator[LogEntry]:
    """Stream the entries in log order, stopping quietly at a torn or garbage tail.

    Reads one header sector at a time, so memory does not grow with the log. The file's
    size is taken once at the start: entries appended while iterating are not seen.
    `sector_size` is used only if the superblock has not been written yet.
    """
    return _scan_entries(path_or_file, _Scan(), sector_size)


def summarize(path, sector_size: int = SECTOR) -> LogSummary:
    scan = _Scan()
    entries = writes = flushes = fua = discards = marks = written = 0
    for e in _scan_entries(path, scan, sector_size):
        entries += 1
        writes += e.is_write
        flushes += e.is_flush
        fua += e.is_fua
        discards += e.is_discard
        marks += e.is_mark
        if e.is_write:
            written += e.data_len
    sb = scan.superblock
    return LogSummary(entries, writes, flushes, fua, discards, written, scan.file_size,
                      not scan.complete, marks, sb.nr_entries, sb.sector_size)


def entry_index_at(path, byte_offset: int, sector_size: int = SECTOR) -> int:
    """How many complete entries end at or before byte_offset.

    Turns "the log was this long when the ack arrived" into a cut index.
    """
    count = 0
    for e in iter_entries(path, sector_size):
        if e.end_offset > byte_offset:
            break
        count += 1
    return count


def read_data(f: BinaryIO, entry: LogEntry) -> bytes:
    """The data of a write (or a mark's text); b"" for flushes and discards."""
    if not entry.data_len:
        return b""
    f.seek(entry.data_offset)
    data = f.read(entry.data_len)
    if len(data) != entry.data_len:
        raise LogFormatError(f"log entry {entry.index}: data cut short")
    return data


class LogWriter:
    """Writes a log in the layout QEMU writes, for tests and synthetic records.

    Sectors are given in 512-byte units, like LogEntry's. Unlike QEMU it writes the
    superblock up front and on close, so its output is complete without a flush; set
    super_update_interval to mimic QEMU's lagging nr_entries between flushes.
    """

    def __init__(self, path, sector_size: int = SECTOR, super_update_interval: int = 4096):
        _check_sector_size(sector_size)
        if super_update_interval < 1:
            raise ValueError("super_update_interval must be at least 1")
        self.sector_size = sector_size
        self.super_update_interval = super_update_interval
        self.nr_entries = 0
        self._file = open(path, "wb")
        self._write_super()
        self._file.seek(sector_size)

    def __enter__(self) -> "LogWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write_super(self) -> None:
        position = self._file.tell()
        self._file.seek(0)
        self._file.write(self._pad(SUPER.pack(MAGIC, VERSION, self.nr_entries, self.sector_size)))
        self._file.seek(position)

    def _pad(self, raw: bytes) -> bytes:
        return raw + bytes(-len(raw) % self.sector_size)

    def _units(self, sector: int, nr_sectors: int) -> tuple[int, int]:
        """512-byte sectors to log sectors."""
        ratio = self.sector_size // SECTOR
        if sector % ratio or nr_sectors % ratio:
            raise ValueError(f"sector {sector} +{nr_sectors} is not aligned to the "
                             f"{self.sector_size}-byte log sector")
        return sector // ratio, nr_sectors // ratio

    def _append(self, sector: int, nr: int, flags: int, inline: bytes = b"", data: bytes = b"") -> int:
        index = self.nr_entries
        header = HEADER.pack(sector, nr, flags, len(inline)) + inline
        self._file.write(self._pad(header))
        self._file.write(data)
        self.nr_entries += 1
        if flags & FLUSH or self.nr_entries % self.super_update_interval == 0:
            self._write_super()
        return index

    def write(self, sector: int, data: bytes, fua: bool = False) -> int:
        """Log a write of data at 512-byte sector `sector`; returns the entry index."""
        if not data or len(data) % self.sector_size:
            raise ValueError(f"write data must be a non-empty multiple of {self.sector_size} bytes")
        sector, nr = self._units(sector, len(data) // SECTOR)
        return self._append(sector, nr, FUA if fua else 0, data=bytes(data))

    def flush(self) -> int:
        return self._append(0, 0, FLUSH)

    def discard(self, sector: int, nr_sectors: int) -> int:
        if nr_sectors < 1:
            raise ValueError("a discard covers at least one sector")
        return self._append(*self._units(sector, nr_sectors), DISCARD)

    def mark(self, name: str) -> int:
        """A dm-log-writes style mark: the name is stored inside the header sector."""
        text = name.encode()
        if not text or len(text) >= self.sector_size - HEADER.size or 0 in text:
            raise ValueError(f"mark name must be 1..{self.sector_size - HEADER.size - 1} bytes, no NUL")
        return self._append(0, 0, MARK, inline=text)

    def close(self) -> None:
        if self._file.closed:
            return
        self._write_super()
        self._file.close()
