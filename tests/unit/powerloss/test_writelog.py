import io
import os
import random
import struct

import pytest

from plugpull.powerloss.writelog import (DISCARD, FLUSH, FUA, MAGIC, MARK, LogEntry, LogFormatError, LogWriter,
                               entry_index_at, iter_entries, read_data, read_superblock, summarize)


def block(byte: int, sectors: int = 1) -> bytes:
    return bytes([byte]) * (512 * sectors)


def sample_log(path, sector_size=512):
    """w(0) w(16,fua) FLUSH discard mark w(64): returns the data of each entry, in order."""
    unit = sector_size // 512
    with LogWriter(path, sector_size=sector_size) as log:
        log.write(0, block(0xA1, 2 * unit))
        log.write(16 * unit, block(0xB2, unit), fua=True)
        log.flush()
        log.discard(32 * unit, 8 * unit)
        log.mark("after-discard")
        log.write(64 * unit, block(0xC3, 4 * unit))
    return [block(0xA1, 2 * unit), block(0xB2, unit), b"", b"", b"after-discard", block(0xC3, 4 * unit)]


@pytest.mark.parametrize("sector_size", [512, 4096])
def test_round_trip(tmp_path, sector_size):
    path = tmp_path / "log"
    datas = sample_log(path, sector_size)
    unit = sector_size // 512
    entries = list(iter_entries(path))
    got = [(e.index, e.sector, e.nr_sectors, e.flags) for e in entries]
    assert got == [
        (0, 0, 2 * unit, 0),
        (1, 16 * unit, unit, FUA),
        (2, 0, 0, FLUSH),
        (3, 32 * unit, 8 * unit, DISCARD),
        (4, 0, 0, MARK),
        (5, 64 * unit, 4 * unit, 0),
    ]
    with open(path, "rb") as f:
        assert [read_data(f, e) for e in entries] == datas
    assert entries[-1].end_offset == os.path.getsize(path)
    for before, after in zip(entries, entries[1:]):
        assert after.header_offset == before.end_offset
    assert [e.is_write for e in entries] == [True, True, False, False, False, True]


def test_layout_is_qemus(tmp_path):
    """Sectors on disk are in log-sector units; headers are padded; data follows the header."""
    path = tmp_path / "log"
    with LogWriter(path, sector_size=4096) as log:
        log.write(16, block(0x5A, 8))
        log.flush()
    raw = path.read_bytes()
    assert struct.unpack_from("<QQQI", raw, 0) == (MAGIC, 1, 2, 4096)
    assert struct.unpack_from("<QQQQ", raw, 4096) == (2, 1, 0, 0)
    assert not any(raw[4096 + 32:8192])
    assert raw[8192:12288] == block(0x5A, 8)
    assert struct.unpack_from("<QQQQ", raw, 12288) == (0, 0, FLUSH, 0)
    assert len(raw) == 16384


def test_summary_counts(tmp_path):
    path = tmp_path / "log"
    sample_log(path)
    s = summarize(path)
    assert (s.entries, s.writes, s.flushes, s.fua, s.discards, s.marks) == (6, 3, 1, 1, 1, 1)
    assert s.bytes_written == 512 * (2 + 1 + 4)
    assert s.log_bytes == os.path.getsize(path)
    assert s.torn_tail is False
    assert s.super_entries == 6


def complete_ends(path):
    return [e.end_offset for e in iter_entries(path)]


def test_truncated_mid_header(tmp_path):
    path = tmp_path / "log"
    sample_log(path)
    ends = complete_ends(path)
    os.truncate(path, ends[2] + 100)
    assert len(list(iter_entries(path))) == 3
    s = summarize(path)
    assert s.entries == 3 and s.torn_tail


def test_truncated_mid_data(tmp_path):
    path = tmp_path / "log"
    sample_log(path)
    ends = complete_ends(path)
    os.truncate(path, ends[-1] - 512)
    entries = list(iter_entries(path))
    assert len(entries) == 5
    assert summarize(path).torn_tail


@pytest.mark.parametrize("tail", [bytes(4096), random.Random(7).randbytes(4096)], ids=["zeros", "garbage"])
def test_junk_after_last_entry(tmp_path, tail):
    path = tmp_path / "log"
    sample_log(path)
    size = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(tail)
    entries = list(iter_entries(path))
    assert len(entries) == 6
    assert entries[-1].end_offset == size
    assert summarize(path).torn_tail


def test_hole_inside_log_stops_there(tmp_path):
    """A kill can leave a later entry written and an earlier one still zeros."""
    path = tmp_path / "log"
    sample_log(path)
    entries = list(iter_entries(path))
    with open(path, "r+b") as f:
        f.seek(entries[3].header_offset)
        f.write(bytes(512))
    assert [e.index for e in iter_entries(path)] == [0, 1, 2]
    assert summarize(path).torn_tail


def test_header_with_unknown_flags_ends_the_log(tmp_path):
    path = tmp_path / "log"
    sample_log(path)
    entries = list(iter_entries(path))
    with open(path, "r+b") as f:
        f.seek(entries[1].header_offset + 16)
        f.write(struct.pack("<Q", 1 << 40))
    assert len(list(iter_entries(path))) == 1


def test_header_with_dirty_padding_ends_the_log(tmp_path):
    """Random bytes can look like a valid header; QEMU always zero-pads it."""
    path = tmp_path / "log"
    sample_log(path)
    header = struct.pack("<QQQQ", 5, 1, 0, 0) + b"\x01" * 480
    with open(path, "ab") as f:
        f.write(header + block(0x77))
    assert len(list(iter_entries(path))) == 6
    assert summarize(path).torn_tail


def test_stale_superblock_count_is_ignored(tmp_path):
    path = tmp_path / "log"
    with LogWriter(path) as log:
        for i in range(5):
            log.write(i * 8, block(i + 1, 8))
    with open(path, "r+b") as f:
        f.seek(16)
        f.write(struct.pack("<Q", 1))
        f.seek(0)
        assert read_superblock(f).nr_entries == 1
    assert len(list(iter_entries(path))) == 5
    s = summarize(path)
    assert (s.entries, s.super_entries, s.torn_tail) == (5, 1, False)


def test_writer_updates_superblock_like_qemu(tmp_path):
    path = tmp_path / "log"
    log = LogWriter(path, super_update_interval=3)
    for i in range(4):
        log.write(i, block(1))
    with open(path, "rb") as f:
        assert read_superblock(f).nr_entries == 3
    log.flush()
    with open(path, "rb") as f:
        assert read_superblock(f).nr_entries == 5
    log.close()


def test_unwritten_superblock_is_accepted(tmp_path):
    """QEMU writes the superblock only at the first flush: before that it is zeros."""
    path = tmp_path / "log"
    sample_log(path)
    with open(path, "r+b") as f:
        f.write(bytes(512))
        sb = read_superblock(f)
    assert (sb.written, sb.nr_entries, sb.sector_size) == (False, 0, 512)
    assert len(list(iter_entries(path))) == 6


def test_empty_file_has_no_entries(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"")
    assert list(iter_entries(path)) == []
    s = summarize(path)
    assert (s.entries, s.torn_tail) == (0, False)


def test_bad_magic_raises(tmp_path):
    path = tmp_path / "log"
    sample_log(path)
    with open(path, "r+b") as f:
        f.write(b"NOTALOG!")
    with open(path, "rb") as f, pytest.raises(LogFormatError, match="magic"):
        read_superblock(f)
    with pytest.raises(ValueError):
        list(iter_entries(path))
    with pytest.raises(LogFormatError):
        summarize(path)


def test_bad_sector_size_raises(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(struct.pack("<QQQI", MAGIC, 1, 0, 256).ljust(512, b"\0"))
    with pytest.raises(LogFormatError, match="sector size"):
        list(iter_entries(path))


def test_entry_index_at(tmp_path):
    path = tmp_path / "log"
    sample_log(path)
    ends = complete_ends(path)
    assert entry_index_at(path, 0) == 0
    assert entry_index_at(path, 512) == 0
    assert entry_index_at(path, ends[0]) == 1
    assert entry_index_at(path, ends[1] - 1) == 1
    assert entry_index_at(path, ends[3]) == 4
    assert entry_index_at(path, 10**12) == 6


class CountingReader(io.BytesIO):
    def __init__(self, data):
        super().__init__(data)
        self.bytes_read = 0

    def read(self, n=-1):
        chunk = super().read(n)
        self.bytes_read += len(chunk)
        return chunk


def test_iteration_streams_headers_only(tmp_path):
    path = tmp_path / "log"
    with LogWriter(path) as log:
        for i in range(32):
            log.write(i * 128, block(i, 128))
    reader = CountingReader(path.read_bytes())
    entries = iter_entries(reader)
    first = next(entries)
    assert first.nr_sectors == 128
    assert reader.bytes_read <= 2 * 512
    assert sum(1 for _ in entries) == 31
    assert reader.bytes_read <= 33 * 512


def test_writer_rejects_misaligned_input(tmp_path):
    with LogWriter(tmp_path / "log", sector_size=4096) as log:
        with pytest.raises(ValueError):
            log.write(1, block(1, 8))
        with pytest.raises(ValueError):
            log.write(0, block(1, 1))
        with pytest.raises(ValueError):
            log.discard(0, 0)


def test_entry_properties():
    e = LogEntry(3, 8, 4, FLUSH | FUA, 2048, 2048)
    assert e.is_flush and e.is_fua and e.is_write and not e.is_discard and not e.is_mark
    assert e.header_offset == 1536 and e.end_offset == 4096
    d = LogEntry(4, 8, 4, DISCARD, 4608, 0)
    assert d.is_discard and not d.is_write and d.end_offset == 4608
