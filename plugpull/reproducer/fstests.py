"""The reproducer as a test in fstests' own form, for tests/generic/, and its golden output.

The test makes the scratch filesystem, puts dm-flakey over it (common/dmflakey), runs the
setup, `sync` and the operations, and right after the point's persistence call
`_flakey_drop_and_remount` drops every write and remounts. It then prints one line per
checked fact: a fact owed as one value prints that value (`B/bar kind: file`), one owed as
any of several prints them all (`A/bar kind: absent or file`) when it holds, and a fact of a
regular file or a symlink is judged only where the path is one (`A/bar nlink (if a file)`).
What a correct filesystem prints is thus fixed: that is the golden `.out` file.

It is written for fstests as of 2025-12-18 (commit eb2ad950), where `_init_flakey` points
SCRATCH_DEV at the flakey device and `_scratch_mount` mounts it; on an older tree, where
`_mount_flakey` did, it takes that path instead (`FLAKEY_MOUNT`). Every mount that fails
stops the test, so the workload never runs on the root filesystem's mount point."""

import re

from plugpull.errors import UsageError
from plugpull.reproducer import ReproducerCase
from plugpull.reproducer.checks import Checks, check_calls, checks, comment, reader_functions
from plugpull.reproducer.findings import fix_lines
from plugpull.reproducer.profiles import fstests_guards, fstests_mkfs
from plugpull.reproducer.sh import DELAY_MS, late_drop
from plugpull.reproducer.steps import Tools, needs_setfattr, op_lines, setup_lines
from plugpull.testbed.fs import FILESYSTEMS

TOOLS = Tools("$SCRATCH_MNT", "$XFS_IO_PROG", "$SETFATTR_PROG", "rm -f")
YEAR = 2026  # the year this form of the test was written, for its copyright line
NUMBER = re.compile(r"[0-9]{3,4}")

SHOW = r"""show() {  # show PATH FACT NEED WHY ALLOWED...: one line, the same on every correct filesystem
	local path=$1 fact=$2 need=$3 why=$4 label value ok
	shift 4
	label="$path $fact"
	if [ "$fact" = kind ]; then
		value=$(kind_of $path)
	elif [ "$(kind_of $path)" != "$need" ]; then
		echo "$label (if a $need): $(either "$@")"
		return
	else
		label="$label (if a $need)"
		value=$(fact_of $path $fact)
	fi
	for ok in "$@"; do
		if [ "$value" = "$ok" ]; then echo "$label: $(either "$@")"; return; fi
	done
	echo "$label: ${value:-none}, owed $(either "$@") ($why)"
}

show_held() {  # show_held KIND MD5 WHY NAME...: is the KIND owed at the first NAME under one of them?
	local kind=$1 md5=$2 why=$3 name
	shift 3
	for name in "$@"; do
		if [ "$(kind_of $name)" = "$kind" ]; then
			if [ "$md5" = - ] || [ "$(fact_of $name md5)" = "$md5" ]; then
				echo "the $kind owed at $1: under one of $*"
				return
			fi
		fi
	done
	echo "the $kind owed at $1: under none of $* ($why)"
}

show_apart() {  # show_apart NAME NAME: prints only where the two are one inode (no step made them so)
	case "$(kind_of $1) $(kind_of $2)" in *absent*|*dir*) return ;; esac
	if [ "$(stat -c %i $SCRATCH_MNT/$1)" = "$(stat -c %i $SCRATCH_MNT/$2)" ]; then
		echo "$1 and $2: one inode, which no step of the workload makes them"
	fi
}
"""

FLAKEY_MOUNT = r"""# fstests since eb2ad950 (2025-12-18): _init_flakey points SCRATCH_DEV at the flakey device
# and _scratch_mount mounts it. Before, SCRATCH_DEV stayed the disk and _mount_flakey mounted
# the flakey device (without stopping the test when it failed).
mount_flakey()
{
	if [ -n "$NON_FLAKEY_DEV" ]; then
		_scratch_mount
	else
		_mount_flakey || _fail "mounting the flakey device failed"
	fi
}

unmount_flakey()
{
	if [ -n "$NON_FLAKEY_DEV" ]; then
		_scratch_unmount
	else
		_unmount_flakey
	fi
}
"""


HOLD_WRITES = r"""# Writes held %d ms in the delay device, reads and flushes not (dm-delay's third group): a
# write the persistence call did not wait for is still held when it returns.
hold_writes()
{
	local size=$(blockdev --getsz $SCRATCH_DEV)
	local table="0 $size delay $SCRATCH_DEV 0 0 $SCRATCH_DEV 0 %d $SCRATCH_DEV 0 0"

	$DMSETUP_PROG suspend --nolockfs $DELAY_NAME && $DMSETUP_PROG load $DELAY_NAME --table "$table" && \
		$DMSETUP_PROG resume $DELAY_NAME || _fail "could not load the write delay"
}
""" % (DELAY_MS, DELAY_MS)


def test_number(name: str) -> str:
    """The test's number, as fstests names a test (`tests/generic/NNN`); UsageError if `name`
    is not one."""
    if not NUMBER.fullmatch(name):
        raise UsageError(f"--out {name!r}: fstests names a test by its number: give --out DIR/NNN (3 or 4 digits)")
    return name


def _either(words) -> str:
    return " or ".join(w or "none" for w in words)


def golden_lines(found: Checks) -> list[str]:
    """What `show` and `show_held` print on a filesystem that keeps every owed fact."""
    lines = []
    for c in found.facts:
        label = f"{c.path} {c.fact}" + ("" if c.fact == "kind" else f" (if a {c.need})")
        lines.append(f"{label}: {_either(c.allowed)}")
    lines += [f"the {h.kind} owed at {h.names[0]}: under one of {' '.join(h.names)}" for h in found.held]
    return lines


def copyright_lines(number: str) -> list[str]:
    return ["#! /bin/bash", "# SPDX-License-Identifier: GPL-2.0",
            f"# Copyright (c) {YEAR} plugpull.  All Rights Reserved.", "#", f"# FS QA Test No. {number}", "#"]


METHOD = {
    "flakey": ["# Right after the persistence call, writes are dropped (dm-flakey) and the filesystem is",
               "# remounted: what it shows must be what the persistence calls made durable."],
    "delay": [f"# The filesystem sits on dm-delay (writes held {DELAY_MS} ms, reads and flushes not) above",
              "# dm-flakey. Right after the persistence call, writes are dropped, those still held",
              "# too, and the filesystem is remounted: what it shows must be what the persistence",
              "# calls made durable, which a write they did not wait for is not."],
}


def header(case: ReproducerCase, found: Checks, number: str, form: str = "flakey") -> list[str]:
    return [*copyright_lines(number),
            f"# {case.title()}, found by plugpull's generated workloads.",
            f"# Workload: {case.whole.text()}", *METHOD[form],
            *comment(found, case), "#"]


def cleanup_lines(*helpers: str) -> list[str]:
    return ["_cleanup()", "{", *(f"\t{h}" for h in helpers), "\tcd /", "\trm -r -f $tmp.*", "}", ""]


def requirements(case: ReproducerCase, targets: tuple[str, ...]) -> list[str]:
    """The test's `_require_*` lines and the fix line of a known finding."""
    attrs = needs_setfattr(case)
    return ["_require_scratch", *fstests_guards(FILESYSTEMS[case.fs]), *(f"_require_dm_target {t}" for t in targets),
            *(["_require_attrs user"] if attrs else []), *fix_lines(case), ""]


def preamble(case: ReproducerCase, form: str = "flakey") -> list[str]:
    attrs = needs_setfattr(case)
    delay = form == "delay"
    cleanup = ("_cleanup_delay", "_cleanup_flakey") if delay else ("_cleanup_flakey",)
    stack = ["_init_flakey",
             "# fstests before eb2ad950 (2025-12-18) left SCRATCH_DEV the disk: the delay goes above the flakey device",
             '[ -n "$NON_FLAKEY_DEV" ] || SCRATCH_DEV=$FLAKEY_DEV', "_init_delay", "hold_writes",
             '_mount_delay || _fail "mounting the delay device failed"'] if delay else ["_init_flakey", "mount_flakey"]
    return [". ./common/preamble", "_begin_fstest auto quick log", "", *cleanup_lines(*cleanup),
            ". ./common/dmflakey", *([". ./common/dmdelay"] if delay else []), *([". ./common/attr"] if attrs else []),
            "", *requirements(case, ("flakey", "delay") if delay else ("flakey",)), HOLD_WRITES if delay else FLAKEY_MOUNT,
            f'{fstests_mkfs(FILESYSTEMS[case.fs])} >>$seqres.full 2>&1 || _fail "mkfs failed"',
            "_require_metadata_journaling $SCRATCH_DEV", *own_mount_options(case), *stack, ""]


def own_mount_options(case: ReproducerCase) -> list[str]:
    """The configuration's mount options (f2fs-strict's fsync_mode), which fstests' mounts take
    from MOUNT_OPTIONS."""
    options = FILESYSTEMS[case.fs].mount_options
    return [f'MOUNT_OPTIONS="$MOUNT_OPTIONS -o {",".join(options)}"'] if options else []


def printing(case: ReproducerCase) -> str:
    """The test's part after the remount: it prints the checked facts (`golden` is what a
    filesystem that keeps them prints)."""
    lines = [reader_functions("$SCRATCH_MNT", "$GETFATTR_PROG"), SHOW,
             *(check_calls(checks(case), "show", "show_held", "show_apart") or ["# nothing is owed"])]
    return "\n".join(lines) + "\n"


def ending(unmount: str) -> list[str]:
    return [unmount, "", "# success, all done", "status=0", "exit"]


CRASH = {
    "flakey": ["# Drop every write from here on (a power cut), unmount, mount again.", "_flakey_drop_and_remount",
               'grep -q " $SCRATCH_MNT " /proc/mounts || _fail "the recovery mount failed"'],
    "delay": ["# Drop every write from here on and those still held (a power cut), unmount, mount again.",
              "read -r returned _ </proc/uptime", "_load_flakey_table $FLAKEY_DROP_WRITES",
              *late_drop(f'_notrun "writes dropped $late ms after the call returned, not within the {DELAY_MS} ms '
                         f'they are held: this machine is too slow to show it"'), "_unmount_delay", "_load_flakey_table $FLAKEY_ALLOW_WRITES",
              "_load_delay_table $DELAY_NONE", '_mount_delay || _fail "the recovery mount failed"'],
}


def test(case: ReproducerCase, number: str = "NNN", form: str = "flakey") -> str:
    """The fstests test of `case`, numbered `number`, in the `flakey` or `delay` form."""
    body = [*header(case, checks(case), number, form), *preamble(case, form), *setup_lines(case, TOOLS),
            *op_lines(case, TOOLS), "", *CRASH[form], "", printing(case),
            *ending("_unmount_delay" if form == "delay" else "unmount_flakey")]
    return "\n".join(body) + "\n"


def golden(case: ReproducerCase, number: str = "NNN") -> str:
    """The test's golden output: what a filesystem that keeps every owed fact prints."""
    return "\n".join([f"QA output created by {number}", *golden_lines(checks(case))]) + "\n"
