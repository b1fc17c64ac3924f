"""The `flushes` form: a finding where no cache flush followed the point's writes (f2fs's
fdatasync in fsync_mode=strict). No power cut shows it every time: a disk may keep a write no
flush covered, and an emulated one always does. What does show it every time is the flush
itself: none reaches the device while the persistence call runs.

The sh script reads the device's count of completed flush requests (`/sys/block/DISK/stat`,
its 16th field, Linux 5.5 on; a partition's flushes count on its whole disk) before the
point's call and after it returned: the same count is a FAIL. A device without a volatile
write cache (`queue/write_cache` not "write back") needs no flush, and the script refuses it
(exit 2). The fstests test does the same with dm-log-writes (common/dmlogwrites): a mark
before the call and one after it, and `replay-log --find --next-flush` from the first: a
correct filesystem logs a flush between them.

Either counts flushes, not their order: a flush sent while the point's write was still in
flight passes here. That is the `delay` form's finding."""

from plugpull.reproducer import ReproducerCase
from plugpull.reproducer.profiles import fstests_mkfs, header_lines, sh_control, sh_mkfs, sh_mount
from plugpull.reproducer.shell import END, EXIT_FOUND, EXIT_USAGE, FSTESTS_TOOLS, PRELUDE, SH_TOOLS as TOOLS, \
    case_tools, cleanup_lines, copyright_lines, guarded, own_mount_options, requirements, usage_and_tools
from plugpull.reproducer.steps import needs_setfattr, op_lines, setup_lines
from plugpull.testbed.fs import FILESYSTEMS

FLUSH_COUNT = r"""disk_dir() {  # the sysfs directory of DEVICE's whole disk (flushes count on the disk, not a partition)
	d_name=$(basename "$(readlink -f "$1")")
	d_sys=$(readlink -f "/sys/class/block/$d_name")
	if [ -e "$d_sys/partition" ]; then d_sys=$(dirname "$d_sys"); fi
	echo "$d_sys"
}

flushes() {  # flush requests the device completed (field 16 of its stat)
	set -- $(cat "$sys/stat")
	[ $# -ge 16 ] || return 1
	shift 15
	echo "$1"
}
"""


def call_index(lines: list[str]) -> int:
    """Where the point's persistence call is among the script's step lines: the last command."""
    return max(i for i, line in enumerate(lines) if not line.startswith("#"))


def _what(case: ReproducerCase) -> str:
    step = case.whole.steps[case.whole.points()[case.point - 1] - 1]
    return step.persist.text()


def title(case: ReproducerCase) -> str:
    return f"{case.ident} on {case.fs}, the cache flushes of point {case.point} ({_what(case)})"


def _sh_body(case: ReproducerCase) -> list[str]:
    fs = FILESYSTEMS[case.fs]
    control = sh_control(fs)
    steps = guarded(setup_lines(case, TOOLS) + op_lines(case, TOOLS))
    at = call_index(steps)
    what = _what(case)
    return [
        'sys=$(disk_dir "$dev")',
        'if [ "$(cat "$sys/queue/write_cache" 2>/dev/null)" != "write back" ]; then',
        f'\techo "$dev has no volatile write cache (queue/write_cache): no flush is owed on it" >&2; '
        f'exit {EXIT_USAGE}',
        "fi",
        f'flushes >/dev/null || {{ echo "$sys/stat counts no flushes (Linux 5.5 on)" >&2; exit {EXIT_USAGE}; }}',
        *control, sh_mkfs(fs), *([] if control else ['mnt=$(mktemp -d) || die "mktemp failed"']),
        sh_mount(fs, '"$dev"'), "",
        *steps[:at], 'before=$(flushes) || die "could not read the flush count"', steps[at],
        'after=$(flushes) || die "could not read the flush count"',
        'umount "$mnt" || die "umount failed"', "",
        'if [ "$after" = "$before" ]; then',
        f'\techo "FAIL: {what} returned and no cache flush reached $dev while it ran: what it wrote may be in'
        ' the disk\'s volatile cache only"',
        f"\texit {EXIT_FOUND}",
        "fi",
        'echo "PASS"',
        "exit 0"]


def script(case: ReproducerCase) -> str:
    """The sh reproducer of `case` in the `flushes` form."""
    header = ["#!/bin/sh",
              f"# Reproducer: {title(case)}.",
              f"# Workload: {case.whole.text()}",
              "# Usage, as root: sh THIS_SCRIPT DEVICE",
              "# EVERYTHING ON DEVICE IS ERASED: the script makes a new filesystem on it.",
              f"# Needs: xfs_io, {FILESYSTEMS[case.fs].mkfs[0]}, mount, a device with a volatile write cache.",
              *header_lines(FILESYSTEMS[case.fs]),
              "# Method: the device's count of completed cache flushes (/sys/block/DISK/stat, field 16),",
              "# read before the point's persistence call and after it returned. A call that makes",
              "# written data durable on such a device must flush its cache: no flush is a FAIL.",
              "# Prints PASS or FAIL; exit 0 PASS, 1 FAIL, 2 bad usage, a missing tool or a device",
              "# without a write cache, 3 a step failed (no verdict)."]
    return "\n".join([*header, "", PRELUDE, *usage_and_tools(case_tools(case)), "", FLUSH_COUNT, *_sh_body(case)]) + "\n"


def fstests_test(case: ReproducerCase, number: str = "NNN") -> str:
    """The fstests test of `case` in the `flushes` form (dm-log-writes, for tests/generic/)."""
    attrs = needs_setfattr(case)
    steps = setup_lines(case, FSTESTS_TOOLS) + op_lines(case, FSTESTS_TOOLS)
    at = call_index(steps)
    what = _what(case)
    body = [*copyright_lines(number),
            f"# {title(case)}, found by plugpull's generated workloads.",
            f"# Workload: {case.whole.text()}",
            "# The point's persistence call must send a cache flush to a device with a volatile",
            "# write cache: dm-log-writes logs the flushes, between a mark before the call and one",
            "# after it returned.",
            "#", ". ./common/preamble", "_begin_fstest auto quick log", "",
            *cleanup_lines("_log_writes_cleanup &> /dev/null"),
            ". ./common/dmlogwrites", *([". ./common/attr"] if attrs else []), "",
            *requirements(case, ())[:-1], "_require_log_writes", "",
            "disk=$(basename $(readlink -f $SCRATCH_DEV))",
            '[ "$(cat /sys/class/block/$disk/queue/write_cache 2>/dev/null)" = "write back" ] || \\',
            '\t_notrun "$SCRATCH_DEV has no volatile write cache: no flush is owed on it"', "",
            "_log_writes_init $SCRATCH_DEV", *own_mount_options(case),
            f'{fstests_mkfs(FILESYSTEMS[case.fs], "_log_writes_mkfs")} >> $seqres.full 2>&1 || _fail "mkfs failed"',
            '_log_writes_mount || _fail "mount failed"', "",
            *steps[:at], "_log_writes_mark pp_call", steps[at], "_log_writes_mark pp_return", "",
            "_log_writes_unmount", "_log_writes_remove",
            "call=$(_log_writes_mark_to_entry_number pp_call)",
            "back=$(_log_writes_mark_to_entry_number pp_return)",
            '[ -n "$call" ] && [ -n "$back" ] || _fail "the marks are not in the log"',
            "flush=$($here/src/log-writes/replay-log --find --log $LOGWRITES_DEV --next-flush \\",
            "\t--start-entry $call 2> /dev/null | cut -f1 -d@)",
            'if [ -n "$flush" ] && [ "$flush" -lt "$back" ]; then',
            f'\techo "a cache flush while {what} ran: yes"',
            "else",
            f'\techo "a cache flush while {what} ran: none"',
            "fi", *END]
    return "\n".join(body) + "\n"


def golden(case: ReproducerCase, number: str = "NNN") -> str:
    return f"QA output created by {number}\na cache flush while {_what(case)} ran: yes\n"
