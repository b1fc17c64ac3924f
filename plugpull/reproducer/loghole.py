"""The `log-hole` form: the XFS finding, a log state recovery cannot read, as a crafted image
(tests/vm/test_xfs_log_hole_vm.py's, here in sh). No workload and no power cut: a fresh XFS whose
log holds one record of cycle 1 (64 blocks, a 32 KiB iclog, its CRC wrong, no commit) with
nothing but zeroed blocks back to the head. Right at the head, recovery takes the record as a
torn write and mounts; that is the control, and a script that sees it fail gives no verdict.
4036 blocks further (the record then ends 4096 blocks, the torn-write window, past the hole,
as in the minimised bonnie++ state), recovery fails with "didn't find previous header": the
FAIL. A recovery that discards the uncommitted record there too mounts: PASS.

The sh script takes the log's place from `xfs_db` (logstart, agblklog, agblocks, blocksize),
writes the record with printf and dd, and mounts. The fstests test (for tests/xfs/) does the
same with `_scratch_mkfs`, `_scratch_xfs_db` and `_try_scratch_mount`."""

import struct

from plugpull.reproducer.shell import END, EXIT_FOUND, PRELUDE, cleanup_lines, copyright_lines, usage_and_tools

XLOG_MAGIC = 0xFEEDBABE  # XFS's XLOG_HEADER_MAGIC_NUM; minimise/ reads records by it, a later stage than this
HEAD = 2  # a fresh log's head: right after mkfs's unmount record
RECORD_BB = 64  # a 32 KiB iclog, in 512-byte log blocks
FAR = HEAD + 4032 + 4  # the record then ends 4096 blocks past the hole's first block (block 6)
TITLE = "XFS log recovery fails on a log record 4096 blocks past a hole"
CULPRIT = "eef983ffeae7 (\"xfs: journal IO cache flush reductions\", Linux 5.14)"

RECORD = r"""be32() {  # $1 as 4 bytes, big-endian
	printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)))"
}

zeros() {
	dd if=/dev/zero bs="$1" count=1 2>/dev/null
}

record() {  # record BLOCK: a log record header of cycle 1 (CRC 0: wrong) at BLOCK, then its @DATA@ data blocks
	be32 @MAGIC@; be32 1; be32 2; be32 @LENGTH@  # XLOG_HEADER_MAGIC_NUM, cycle, version 2, h_len
	be32 1; be32 "$1"; be32 1; be32 @HEAD@  # h_lsn 1:BLOCK, h_tail_lsn 1:@HEAD@
	be32 0; be32 @HEAD@; be32 0  # h_crc, h_prev_block, h_num_logops
	zeros 468
	r_i=0
	while [ $r_i -lt @DATA@ ]; do be32 1; zeros 508; r_i=$((r_i + 1)); done  # each block starts with its cycle
}
"""
for _word, _value in (("@MAGIC@", XLOG_MAGIC), ("@DATA@", RECORD_BB - 1), ("@LENGTH@", (RECORD_BB - 1) * 512),
                      ("@HEAD@", HEAD)):
    RECORD = RECORD.replace(_word, str(_value))


def record_bytes(block: int) -> bytes:
    """The record `record BLOCK` writes: a header of cycle 1 at log block `block` (LSN 1:block,
    tail 1:HEAD, CRC 0), then its data blocks, each starting with the cycle number."""
    header = struct.pack(">IIIiQQIIi", XLOG_MAGIC, 1, 2, (RECORD_BB - 1) * 512, (1 << 32) | block, (1 << 32) | HEAD,
                         0, HEAD, 0)
    return header.ljust(512, b"\0") + b"".join(struct.pack(">I", 1).ljust(512, b"\0") for _ in range(RECORD_BB - 1))


def _layout(db: str) -> list[str]:
    """Shell lines that set `log` (the internal log's first 512-byte block on the device) and
    `log_bb` (its length in 512-byte blocks) from `db`, a command printing the superblock."""
    return [
        f"sb=$({db}) || die \"xfs_db failed\"",
        "field() { echo \"$sb\" | sed -n \"s/^$1 = //p\"; }",
        "logstart=$(field logstart) agblklog=$(field agblklog) agblocks=$(field agblocks) bsize=$(field blocksize)",
        "logblocks=$(field logblocks)",
        '[ -n "$logstart" ] && [ "$logstart" -gt 0 ] || die "no internal log (logstart ${logstart:-unknown})"',
        "log=$(( ((logstart >> agblklog) * agblocks + (logstart & ((1 << agblklog) - 1))) * bsize / 512 ))",
        "log_bb=$((logblocks * bsize / 512))",
        f'[ "$log_bb" -gt {FAR + RECORD_BB} ] || die "the log is too small: $log_bb blocks"']


def crafting() -> str:
    """Shell functions: `crafted BLOCK` makes a fresh XFS on $dev with one record at log block
    BLOCK (`die` stops the script on a step that fails)."""
    db = 'xfs_db -r -c "sb 0" -c "p logstart agblklog agblocks blocksize logblocks" "$dev"'
    lines = [RECORD, "crafted() {  # crafted BLOCK: a fresh XFS on $dev with one record at log block BLOCK",
             '\tmkfs.xfs -q -f "$dev" >/dev/null || die "mkfs.xfs failed"', *(f"\t{line}" for line in _layout(db)),
             '\trecord "$1" | dd of="$dev" bs=512 seek=$((log + $1)) conv=notrunc,fsync 2>/dev/null || die "dd failed"',
             "}"]
    return "\n".join(lines)


def script() -> str:
    """The sh reproducer of the XFS log hole."""
    header = ["#!/bin/sh",
              f"# Reproducer: {TITLE} (plugpull's XFS finding).",
              "# Usage, as root: sh THIS_SCRIPT DEVICE (300 MiB at least)",
              "# EVERYTHING ON DEVICE IS ERASED: the script makes a new filesystem on it, twice.",
              "# Needs: mkfs.xfs, xfs_db, mount, dd, printf, sed.",
              "# Method: a fresh XFS whose log holds one record of cycle 1 (an uncommitted 32 KiB iclog,",
              "# its CRC wrong) and only zeroed blocks back to the head, as a disk cache that kept a late",
              "# iclog and lost an earlier one leaves it. At the head (the control) recovery discards it",
              f"# as a torn write and mounts; {FAR - HEAD} blocks further it must do the same. States of this",
              f"# kind arise since {CULPRIT}.",
              "# Prints PASS or FAIL; exit 0 PASS, 1 FAIL, 2 bad usage or a missing tool, 3 a step failed."]
    body = [
        *usage_and_tools(["mkfs.xfs", "xfs_db", "mount", "umount", "dd", "sed", "mktemp"]),
        "", crafting(), "",
        'mnt=$(mktemp -d) || die "mktemp failed"',
        f"crafted {HEAD}",
        'mount -t xfs "$dev" "$mnt" || die "the control (a torn record at the log\'s head) did not mount"',
        'umount "$mnt" || die "umount failed"',
        f"crafted {FAR}",
        'if ! mount -t xfs "$dev" "$mnt" 2>/dev/null; then',
        f'\techo "FAIL: XFS log recovery failed on a log whose only record lies {FAR - HEAD} blocks past a hole'
        f' (ending 4096 blocks past it), where a record at the head is discarded"',
        f"\texit {EXIT_FOUND}",
        "fi",
        'umount "$mnt" || die "umount failed"',
        'echo "PASS"',
        "exit 0"]
    return "\n".join([*header, "", PRELUDE, *body]) + "\n"


def fstests_test(number: str = "NNN") -> str:
    """The fstests test of the XFS log hole, for tests/xfs/."""
    body = [*copyright_lines(number),
            f"# {TITLE}: a fresh XFS whose log holds one uncommitted record (its CRC",
            "# wrong) and only zeroed blocks back to the head. At the head recovery discards it as a",
            f"# torn write; {FAR - HEAD} blocks further (ending 4096 blocks, the torn-write window, past the",
            f"# hole) it must too. Such states arise since {CULPRIT}.",
            "#", ". ./common/preamble", "_begin_fstest auto quick log", "", *cleanup_lines(),
            "_require_scratch_nocheck", "", RECORD,
            "crafted()  # crafted BLOCK: a fresh XFS with one record at log block BLOCK",
            "{",
            '\t_scratch_mkfs >> $seqres.full 2>&1 || _fail "mkfs failed"',
            *(f"\t{line}" for line in _layout('_scratch_xfs_db -r -c "sb 0" -c "p logstart agblklog agblocks '
                                              'blocksize logblocks"')),
            "\trecord $1 > $tmp.rec",
            '\tdd if=$tmp.rec of=$SCRATCH_DEV bs=512 seek=$((log + $1)) conv=notrunc,fsync 2>> $seqres.full || \\',
            '\t\t_fail "writing the record failed"',
            "}", "",
            "die() { _fail \"$*\"; }", "",
            f"crafted {HEAD}",
            "_try_scratch_mount >> $seqres.full 2>&1 && echo \"a torn record at the log's head: mounted\" || \\",
            "\techo \"a torn record at the log's head: log recovery failed\"",
            "_scratch_unmount >> $seqres.full 2>&1",
            f"crafted {FAR}",
            f"_try_scratch_mount >> $seqres.full 2>&1 && echo \"a record {FAR - HEAD} blocks past a hole: mounted\" || \\",
            f"\techo \"a record {FAR - HEAD} blocks past a hole: log recovery failed\"",
            "_scratch_unmount >> $seqres.full 2>&1", *END]
    return "\n".join(body) + "\n"


def golden(number: str = "NNN") -> str:
    return (f"QA output created by {number}\na torn record at the log's head: mounted\n"
            f"a record {FAR - HEAD} blocks past a hole: mounted\n")
