"""The reproducer as a test in fstests' own form, for tests/generic/, and its golden output.

The test makes the scratch filesystem, puts dm-flakey over it (common/dmflakey), runs the
setup, `sync` and the operations, and right after the point's persistence call
`_flakey_drop_and_remount` drops every write and remounts. It then prints one line per
checked fact: a fact owed as one value prints that value (`B/bar kind: file`), one owed as
any of several prints them all (`A/bar kind: absent or file`) when it holds, and a fact of a
regular file or a symlink is judged only where the path is one (`A/bar nlink (if a file)`).
What a correct filesystem prints is thus fixed: that is the golden `.out` file."""

from plugpull.reproducer import Case
from plugpull.reproducer.checks import Checks, check_calls, checks, comment, reader_functions
from plugpull.reproducer.steps import Tools, needs_setfattr, op_lines, setup_lines
from plugpull.testbed.fs import FILESYSTEMS

TOOLS = Tools("$SCRATCH_MNT", "$XFS_IO_PROG", "$SETFATTR_PROG", "rm -f")

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
"""


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


def header(case: Case, found: Checks, number: str) -> list[str]:
    return ["#! /bin/bash", "# SPDX-License-Identifier: GPL-2.0", "# Copyright (c) YEAR NAME.  All Rights Reserved.",
            "#", f"# FS QA Test No. {number}", "#",
            f"# {case.title()}, found by plugpull's generated workloads.",
            f"# Workload: {case.whole.text()}",
            "# Right after the persistence call, writes are dropped (dm-flakey) and the filesystem is",
            "# remounted: what it shows must be what the persistence calls made durable.",
            *comment(found, case), "#"]


def preamble(case: Case) -> list[str]:
    attrs = needs_setfattr(case)
    return [". ./common/preamble", "_begin_fstest auto quick log", "",
            "_cleanup()", "{", "\t_cleanup_flakey", "\tcd /", "\trm -r -f $tmp.*", "}", "",
            ". ./common/filter", ". ./common/dmflakey", *([". ./common/attr"] if attrs else []), "",
            "_require_scratch", "_require_dm_target flakey", *(["_require_attrs user"] if attrs else []), "",
            '_scratch_mkfs >>$seqres.full 2>&1 || _fail "mkfs failed"',
            "_require_metadata_journaling $SCRATCH_DEV", *_own_mount_options(case), "_init_flakey", "_mount_flakey", ""]


def _own_mount_options(case: Case) -> list[str]:
    """The configuration's mount options (f2fs-strict's fsync_mode), which _mount_flakey takes
    from MOUNT_OPTIONS."""
    options = FILESYSTEMS[case.fs].mount_options
    return [f'MOUNT_OPTIONS="$MOUNT_OPTIONS -o {",".join(options)}"'] if options else []


def printing(case: Case) -> str:
    """The test's part after the remount: it prints the checked facts (`golden` is what a
    filesystem that keeps them prints)."""
    lines = [reader_functions("$SCRATCH_MNT", "$GETFATTR_PROG"), SHOW,
             *(check_calls(checks(case), "show", "show_held") or ["# nothing is owed"])]
    return "\n".join(lines) + "\n"


def test(case: Case, number: str = "NNN") -> str:
    """The fstests test of `case`, numbered `number`."""
    body = [*header(case, checks(case), number), *preamble(case), *setup_lines(case, TOOLS), *op_lines(case, TOOLS),
            "", "# Drop every write from here on (a power cut), unmount, mount again.", "_flakey_drop_and_remount", "",
            printing(case), "_unmount_flakey", "", "# success, all done", "status=0", "exit"]
    return "\n".join(body) + "\n"


def golden(case: Case, number: str = "NNN") -> str:
    """The test's golden output: what a filesystem that keeps every owed fact prints."""
    return "\n".join([f"QA output created by {number}", *golden_lines(checks(case))]) + "\n"
