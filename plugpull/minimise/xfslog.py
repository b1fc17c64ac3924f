"""An XFS log record read from a logged write: its header, and whether it holds a commit.

A log record (an iclog on disk) starts with a header block: magic 0xFEEDBABE, the cycle, the
record's length and LSN, the tail LSN, the number of op headers. Its data blocks follow, each
with its first word replaced by the cycle number; the words it replaced are kept in the
header's cycle-data array, so the ops can be walked once they are put back. Each op header
(transaction id, length, client, flags) is followed by its payload; a checkpoint's commit
record is an op with XLOG_COMMIT_TRANS set. Only what one header block covers is restored
(records up to 32 KiB, the default iclog size); a longer record's later ops are not walked.
"""

import struct
from dataclasses import dataclass

from plugpull.powerloss.writelog import SECTOR
from plugpull.reproducer.loghole import XLOG_MAGIC

HEADER = struct.Struct(">IIIiQQIIi")  # magic, cycle, version, len, lsn, tail, crc, prev block, ops
CYCLE_DATA = 44  # offset of h_cycle_data in the header block
CYCLE_WORDS = 64  # data blocks whose first word one header block keeps
OP_HEADER = struct.Struct(">IiBBH")  # tid, len, client id, flags, reserved
COMMIT_TRANS, START_TRANS, UNMOUNT_TRANS = 0x02, 0x01, 0x20


def lsn(value: int) -> str:
    return f"{value >> 32}:{value & 0xFFFFFFFF}"


@dataclass(frozen=True)
class LogRecord:
    cycle: int
    lsn: int
    tail_lsn: int
    length: int  # bytes of data after the header block
    ops: int
    commits: int  # op headers with XLOG_COMMIT_TRANS
    starts: int
    unmount: bool

    def __str__(self) -> str:
        commit = f"{self.commits} commit record{'s' * (self.commits != 1)}" if self.commits else "no commit record"
        return (f"log record, cycle {self.cycle}, LSN {lsn(self.lsn)}, {self.length} bytes, {self.ops} ops, "
                f"{commit}" + (", unmount record" if self.unmount else "") + f", tail {lsn(self.tail_lsn)}")


def _restored(data: bytes, length: int) -> bytes:
    """The record's data with each block's first word put back from the cycle-data array."""
    body = bytearray(data[SECTOR:SECTOR + length])
    for i in range(min(CYCLE_WORDS, len(body) // SECTOR)):
        body[i * SECTOR:i * SECTOR + 4] = data[CYCLE_DATA + 4 * i:CYCLE_DATA + 4 * i + 4]
    return bytes(body)


def _flags(body: bytes, ops: int):
    at = 0
    for _ in range(ops):
        if at + OP_HEADER.size > len(body):
            return
        _tid, length, _client, flags, _ = OP_HEADER.unpack_from(body, at)
        yield flags
        if length < 0:
            return
        at += OP_HEADER.size + length


def parse_record(data: bytes) -> LogRecord | None:
    """The log record that starts `data` (a logged write's bytes), or None if none does."""
    if len(data) < SECTOR:
        return None
    magic, cycle, _version, length, at_lsn, tail, _crc, _prev, ops = HEADER.unpack_from(data)
    if magic != XLOG_MAGIC:
        return None
    flags = list(_flags(_restored(data, max(length, 0)), ops)) if length > 0 else []
    return LogRecord(cycle, at_lsn, tail, length, ops, sum(1 for f in flags if f & COMMIT_TRANS),
                     sum(1 for f in flags if f & START_TRANS), any(f & UNMOUNT_TRANS for f in flags))


def block_cycle(data: bytes) -> int:
    """The cycle a log block shows: a header's h_cycle, else the block's first word."""
    if len(data) < 8:
        return 0
    magic, cycle = struct.unpack_from(">II", data)
    return cycle if magic == XLOG_MAGIC else magic
