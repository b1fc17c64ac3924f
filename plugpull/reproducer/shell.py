"""The shell pieces every reproducer form shares, in both styles; a form's module (`flakey`
and `delay` through `sh` and `fstests`, `flushes`, `loghole`) composes them.

The sh script's: its exit codes, its prelude (its names, the mount point and dm devices gone
on every path out, `die` for a step that failed, the flakey table swap), the functions that
check what the point owes, its first checks (one block device, root, every tool, the dm
targets), commands guarded by `die`, and the late-drop guard of a script that holds writes. The fstests test's boilerplate: the copyright lines, its
`_cleanup`, its `_require_*` lines, the configuration's mount options, its number and its end.
"""

import re
from dataclasses import dataclass

from plugpull.errors import UsageError
from plugpull.reproducer import ReproducerCase
from plugpull.reproducer.findings import fix_lines
from plugpull.reproducer.profiles import fstests_guards
from plugpull.reproducer.steps import Tools, needs_setfattr
from plugpull.testbed.fs import FILESYSTEMS

EXIT_FOUND, EXIT_USAGE, EXIT_NO_VERDICT = 1, 2, 3
SH_TOOLS = Tools('"$mnt"', "xfs_io", "setfattr", "rm -f")
FSTESTS_TOOLS = Tools("$SCRATCH_MNT", "$XFS_IO_PROG", "$SETFATTR_PROG", "rm -f")
DELAY_MS = 2000  # longer than any write takes under TCG, and than starting dmsetup on a loaded one (600 was not)
YEAR = 2026  # the year the fstests form of the tests was written, for their copyright line
NUMBER = re.compile(r"[0-9]{3,4}")

PRELUDE = r"""set -u
name=plugpull-repro-$$
mnt=
created=
delayed=
failed=0

remove() {  # a dm device, and its /dev/mapper node (without udev nothing else drops it)
	dmsetup resume "$1" 2>/dev/null
	dmsetup remove --retry "$1"
	dmsetup mknodes "$1" 2>/dev/null
}

cleanup() {
	cd /
	if [ -n "$mnt" ]; then
		if grep -q " $mnt " /proc/mounts; then umount "$mnt"; fi
		rmdir "$mnt"
	fi
	if [ -n "$delayed" ]; then remove "$name-delay"; fi
	if [ -n "$created" ]; then remove "$name"; fi
}
trap cleanup EXIT
trap 'exit @NO_VERDICT@' HUP INT TERM

die() {  # a step before the check failed: no verdict
	echo "ERROR: $*" >&2
	exit @NO_VERDICT@
}

table() {  # load dm table $1 into the flakey device, the filesystem left unfrozen (as fstests does)
	dmsetup suspend --nolockfs "$name" && dmsetup load "$name" --table "$1" && dmsetup resume "$name"
}
""".replace("@NO_VERDICT@", str(EXIT_NO_VERDICT))

CHECKS = r"""wrong() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

check() {  # check PATH FACT NEED WHY ALLOWED...: FACT of PATH is one of ALLOWED (judged where PATH is a NEED)
	c_path=$1 c_fact=$2 c_need=$3 c_why=$4
	shift 4
	if [ "$c_fact" = kind ]; then
		c_value=$(kind_of "$c_path")
	elif [ "$(kind_of "$c_path")" != "$c_need" ]; then
		return 0
	else
		c_value=$(fact_of "$c_path" "$c_fact")
	fi
	for c_ok in "$@"; do
		if [ "$c_value" = "$c_ok" ]; then return 0; fi
	done
	wrong "$c_path: $c_fact is ${c_value:-none}, owed $(either "$@") ($c_why)"
}

held() {  # held KIND MD5 WHY NAME...: one of the NAMEs is a KIND (with contents MD5, unless -)
	h_kind=$1 h_md5=$2 h_why=$3
	shift 3
	for h_name in "$@"; do
		if [ "$(kind_of "$h_name")" = "$h_kind" ]; then
			if [ "$h_md5" = - ] || [ "$(fact_of "$h_name" md5)" = "$h_md5" ]; then return 0; fi
		fi
	done
	wrong "the $h_kind owed at $1 is under none of $* ($h_why)"
}

apart() {  # apart NAME NAME: the two, where both are there, are not one inode
	case "$(kind_of "$1") $(kind_of "$2")" in *absent*|*dir*) return 0 ;; esac
	if [ "$(stat -c %i "$mnt/$1")" = "$(stat -c %i "$mnt/$2")" ]; then
		wrong "$1 and $2 are one inode (link count $(stat -c %h "$mnt/$1")), which no step of the workload makes them"
	fi
}
"""

END = ["", "# success, all done", "status=0", "exit"]  # an fstests test's last lines


def usage_and_tools(tools: list[str]) -> list[str]:
    """The script's first checks: one block device, root, every tool there (else exit 2)."""
    return [
        'if [ $# -ne 1 ] || [ ! -b "$1" ]; then',
        '\techo "usage: sh $0 DEVICE (a block device; everything on it is erased)" >&2',
        f"\texit {EXIT_USAGE}",
        "fi",
        'dev=$1',
        f'if [ "$(id -u)" != 0 ]; then echo "run as root (mkfs, mount)" >&2; exit {EXIT_USAGE}; fi',
        f"for tool in {' '.join(tools)}; do",
        f'\tcommand -v "$tool" >/dev/null 2>&1 || {{ echo "missing tool: $tool" >&2; exit {EXIT_USAGE}; }}',
        "done"]


def dm_targets(*targets: str) -> list[str]:
    lines = []
    for target in targets:
        lines += [f"modprobe dm-{target} 2>/dev/null",
                  f"if ! dmsetup targets | grep -q '^{target}'; then",
                  f'\techo "missing: the dm-{target} target (CONFIG_DM_{target.upper()})" >&2; exit {EXIT_USAGE}',
                  "fi"]
    return lines


def case_tools(case: ReproducerCase) -> list[str]:
    return ["xfs_io", FILESYSTEMS[case.fs].mkfs[0], "mount", "umount", "stat", "readlink", "md5sum", "cut", "grep",
            "blockdev", "mktemp"] + (["setfattr", "getfattr"] if needs_setfattr(case) else [])


def guarded(lines: list[str]) -> list[str]:
    """Commands that must work, each stopping the script with no verdict if it does not,
    named by the comment above it."""
    out, what = [], "a step"
    for line in lines:
        if line.startswith("#"):
            what = line.lstrip("# ").replace('"', "'").replace("$", "")
            out.append(line)
        else:
            out.append(f'{line} || die "{what}: failed"')
    return out


def late_drop(refuse: str) -> list[str]:
    """Shell lines around the drop of a form that holds writes: a drop that came DELAY_MS or
    more after the persistence call returned (a slow or loaded machine) may have let a write the
    call did not wait for reach the disk, so a PASS would say nothing: `refuse` then ends the
    run, with the milliseconds in `$late`. /proc/uptime's hundredths, read by a builtin (no
    process started)."""
    return ['read -r dropped _ </proc/uptime',
            'late=$(( ((${dropped%.*} - ${returned%.*}) * 100 + 1${dropped#*.} - 1${returned#*.}) * 10 ))',
            f'if [ "$late" -ge {DELAY_MS} ]; then {refuse}; fi']


def test_number(name: str) -> str:
    """The test's number, as fstests names a test (`tests/generic/NNN`); UsageError if `name`
    is not one."""
    if not NUMBER.fullmatch(name):
        raise UsageError(f"--out {name!r}: fstests names a test by its number: give --out DIR/NNN (3 or 4 digits)")
    return name


def copyright_lines(number: str) -> list[str]:
    return ["#! /bin/bash", "# SPDX-License-Identifier: GPL-2.0",
            f"# Copyright (c) {YEAR} plugpull.  All Rights Reserved.", "#", f"# FS QA Test No. {number}", "#"]


def cleanup_lines(*helpers: str) -> list[str]:
    return ["_cleanup()", "{", *(f"\t{h}" for h in helpers), "\tcd /", "\trm -r -f $tmp.*", "}", ""]


def requirements(case: ReproducerCase, targets: tuple[str, ...], fiemap: bool = False) -> list[str]:
    """The test's `_require_*` lines (fiemap's where it checks extents) and the fix line of a
    known finding."""
    attrs = needs_setfattr(case)
    return ["_require_scratch", *fstests_guards(FILESYSTEMS[case.fs]), *(f"_require_dm_target {t}" for t in targets),
            *(["_require_attrs user"] if attrs else []), *(["_require_xfs_io_command fiemap"] if fiemap else []),
            *fix_lines(case), ""]


def own_mount_options(case: ReproducerCase) -> list[str]:
    """The configuration's mount options (f2fs-strict's fsync_mode), which fstests' mounts take
    from MOUNT_OPTIONS."""
    options = FILESYSTEMS[case.fs].mount_options
    return [f'MOUNT_OPTIONS="$MOUNT_OPTIONS -o {",".join(options)}"'] if options else []


@dataclass(frozen=True)
class Drop:
    """What a form that drops every write right after the point (fstests' dm-flakey method)
    adds, in each style: `flakey` and `delay` are rows of it, `sh` and `fstests` the rest."""

    targets: tuple[str, ...]  # the dm targets it needs
    sh_method: tuple[str, ...]  # the script's "# Method" lines
    fstests_method: tuple[str, ...]  # the test's
    fstests_cleanup: tuple[str, ...]  # what its _cleanup calls
    fstests_helpers: str  # shell functions the test defines before its mkfs
    fstests_stack: tuple[str, ...]  # the devices made over the scratch device, and the mount
    fstests_crash: tuple[str, ...]  # the drop, the unmount and the recovery mount
    fstests_unmount: str  # its last unmount
    fstests_common: tuple[str, ...] = ()  # common/ files it sources besides dmflakey
    sh_device: tuple[str, ...] = ()  # the devices made over the flakey one
    sh_top: str = '"/dev/mapper/$name"'  # the device the filesystem is mounted from
    sh_cut: str = ""  # said after "the power cut: every write from here on is dropped"
    sh_drop: tuple[str, ...] = ('table "$drop" || die "could not load the drop_writes table"',)
    sh_unstack: tuple[str, ...] = ()  # after the unmount, before the pass-through table is loaded
