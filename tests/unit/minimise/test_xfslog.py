import struct

from plugpull.minimise.explain import xfs_log_context, xfs_meaning
from plugpull.minimise.xfslog import COMMIT_TRANS, START_TRANS, XLOG_MAGIC, block_cycle, parse_record
from plugpull.powerloss.legal import legality
from plugpull.powerloss.models import Piece, plan
from plugpull.powerloss.writelog import FLUSH, LogEntry

CYCLE = 7


def op(flags: int, payload: bytes) -> bytes:
    return struct.pack(">IiBBH", 0x1234, len(payload), 0x69, flags, 0) + payload


def record(ops: list[bytes], blocks: int = 2) -> bytes:
    """A log record as XFS writes it: header block, data blocks stamped with the cycle."""
    body = bytearray(b"".join(ops).ljust(blocks * 512, b"\0"))
    saved = b"".join(bytes(body[i * 512:i * 512 + 4]) for i in range(blocks))
    for i in range(blocks):
        body[i * 512:i * 512 + 4] = struct.pack(">I", CYCLE)
    header = struct.pack(">IIIiQQIIi", XLOG_MAGIC, CYCLE, 2, len(body), (CYCLE << 32) | 70, (CYCLE << 32) | 2,
                         0, 6, len(ops))
    return (header + saved).ljust(512, b"\0") + bytes(body)


def test_a_commit_record_is_found_behind_the_stamped_cycle():
    # the second op header starts in the second data block, whose first word is the cycle on disk
    first = op(START_TRANS, b"s" * (512 - 12 - 12 + 4))
    rec = parse_record(record([first, op(COMMIT_TRANS, b"")]))
    assert (rec.cycle, rec.lsn, rec.tail_lsn, rec.ops, rec.commits, rec.starts) == (CYCLE, (CYCLE << 32) | 70,
                                                                                   (CYCLE << 32) | 2, 2, 1, 1)
    assert "LSN 7:70" in str(rec) and "1 commit record" in str(rec)


def test_a_record_without_commit_says_so():
    rec = parse_record(record([op(0, b"x" * 100), op(0, b"y" * 40)]))
    assert rec.commits == 0 and "no commit record" in str(rec)
    assert parse_record(b"\0" * 1024) is None


def test_block_cycle_reads_headers_and_stamped_blocks():
    data = record([op(0, b"")])
    assert block_cycle(data) == CYCLE and block_cycle(data[512:]) == CYCLE
    assert block_cycle(bytes(512)) == 0


SB = {"blocksize": 4096, "agblocks": 4096, "logstart": 1024, "logblocks": 1024, "agblklog": 12, "sectsize": 512}
LOG0 = 1024 * 8  # the log's first sector


def xfs_log(iclogs: int) -> list[LogEntry]:
    """XFS 6.1 on a disk without FUA, as blklogwrites logs it: a commit record written
    PREFLUSH+FUA (flush, write, flush), then a checkpoint's iclogs with no flush between."""
    flush = (0, 0, FLUSH)
    ops = [flush, (LOG0, 8, 0), flush] + [(LOG0 + 8 + 64 * i, 64, 0) for i in range(iclogs)]
    return [LogEntry(i, sector, n, flags, 0, 512 * n) for i, (sector, n, flags) in enumerate(ops)]


def test_the_context_counts_iclogs_past_the_flushed_head():
    entries = xfs_log(100)
    text = xfs_log_context(SB, entries, len(entries), 3 + 80)
    assert text.startswith("log write 81 since flush entry 2, next: no flush before the cut")
    assert "5120 basic blocks (80 records of its size) past block 8" in text
    assert "internal log, basic block 8 " in xfs_meaning(SB, (LOG0 + 8) * 512, b"")


def test_keeping_a_late_iclog_and_losing_an_early_one_is_legal_but_not_the_commit_record():
    entries = xfs_log(100)
    whole = [Piece(e.index, e.sector, e.nr_sectors) for e in entries if e.nr_sectors]
    assert legality(entries, len(entries), [whole[0], whole[80]]).legal
    assert not legality(entries, len(entries), [whole[80]]).legal


def test_reorder_never_drops_the_flushed_commit_record():
    entries = xfs_log(100)
    for seed in range(50):
        pieces = plan(entries, len(entries), "reorder", seed)
        assert 1 in {p.entry_index for p in pieces}
        assert legality(entries, len(entries), pieces).legal
