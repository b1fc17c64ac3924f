"""The reproducer as a POSIX sh script (busybox sh, dash): `sh repro.sh DEVICE`, as root.

It makes the filesystem on DEVICE (erasing it), puts a dm-flakey device over it, runs the
setup and `sync`, then the operations; right after the chosen point's persistence call it
makes the flakey device drop every write (`dmsetup suspend --nolockfs`, a `drop_writes`
table, resume), unmounts, loads the pass-through table, mounts (the filesystem recovers as
after a power cut) and checks what the point owes. It prints `PASS`, or one `FAIL:` line per
wrong fact and a `FAIL:` summary. Exit: 0 PASS, 1 FAIL, 2 bad usage or a missing tool, 3 a
step before the check failed (no verdict). The mount point and the flakey device go on every
path out."""

from plugpull.reproducer import Case
from plugpull.reproducer.checks import Checks, check_calls, checks, comment, reader_functions
from plugpull.reproducer.steps import Tools, needs_setfattr, op_lines, setup_lines
from plugpull.testbed.fs import FILESYSTEMS

TOOLS = Tools('"$mnt"', "xfs_io", "setfattr", "rm -f")
EXIT_FOUND, EXIT_USAGE, EXIT_NO_VERDICT = 1, 2, 3

PRELUDE = r"""set -u
name=plugpull-repro-$$
mnt=
created=
failed=0

cleanup() {
	cd /
	if [ -n "$mnt" ]; then
		if grep -q " $mnt " /proc/mounts; then umount "$mnt"; fi
		rmdir "$mnt"
	fi
	if [ -n "$created" ]; then
		dmsetup remove --retry "$name"
		dmsetup mknodes "$name" 2>/dev/null  # without udev: drop its /dev/mapper node
	fi
}
trap cleanup EXIT
trap 'exit 3' HUP INT TERM

die() {  # a step before the check failed: no verdict
	echo "ERROR: $*" >&2
	exit 3
}

table() {  # load dm table $1 into the flakey device, the filesystem left unfrozen (as fstests does)
	dmsetup suspend --nolockfs "$name" && dmsetup load "$name" --table "$1" && dmsetup resume "$name"
}
"""

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
"""


def header(case: Case, found: Checks) -> list[str]:
    return ["#!/bin/sh",
            f"# Reproducer: {case.title()}.",
            f"# Workload: {case.whole.text()}",
            "# Usage, as root: sh THIS_SCRIPT DEVICE",
            "# EVERYTHING ON DEVICE IS ERASED: the script makes a new filesystem on it.",
            f"# Needs: dmsetup and the dm-flakey target, xfs_io, {' '.join(FILESYSTEMS[case.fs].mkfs[:1])}, mount,",
            "# and stat, readlink, md5sum, blockdev, mktemp" + (", setfattr, getfattr." if needs_setfattr(case) else "."),
            "# Method (fstests' dm-flakey): right after the point's persistence call every write is",
            "# dropped, the filesystem is unmounted and mounted again: what the disk had then is",
            "# what a power cut would have left.",
            *comment(found, case),
            "# Prints PASS or FAIL lines; exit 0 PASS, 1 FAIL, 2 bad usage or a missing tool,",
            "# 3 a step before the check failed (no verdict)."]


def preflight(case: Case) -> list[str]:
    tools = ["dmsetup", "xfs_io", FILESYSTEMS[case.fs].mkfs[0], "mount", "umount", "stat", "readlink", "md5sum",
             "cut", "grep", "blockdev", "mktemp"] + (["setfattr", "getfattr"] if needs_setfattr(case) else [])
    return [
        'if [ $# -ne 1 ] || [ ! -b "$1" ]; then',
        '\techo "usage: sh $0 DEVICE (a block device; everything on it is erased)" >&2',
        f"\texit {EXIT_USAGE}",
        "fi",
        'dev=$1',
        f'if [ "$(id -u)" != 0 ]; then echo "run as root (dmsetup, mkfs, mount)" >&2; exit {EXIT_USAGE}; fi',
        f"for tool in {' '.join(tools)}; do",
        f'\tcommand -v "$tool" >/dev/null 2>&1 || {{ echo "missing tool: $tool" >&2; exit {EXIT_USAGE}; }}',
        "done",
        "modprobe dm-flakey 2>/dev/null",
        "if ! dmsetup targets | grep -q '^flakey'; then",
        f'\techo "missing: the dm-flakey target (CONFIG_DM_FLAKEY)" >&2; exit {EXIT_USAGE}',
        "fi"]


def mount_command(fs) -> str:
    options = f" -o {','.join(fs.mount_options)}" if fs.mount_options else ""
    return f'mount -t {fs.mount_type}{options} "/dev/mapper/$name" "$mnt"'


def make_and_mount(case: Case) -> list[str]:
    fs = FILESYSTEMS[case.fs]
    mount = mount_command(fs)
    return [
        'size=$(blockdev --getsz "$dev") || die "blockdev --getsz $dev failed"',
        'live="0 $size flakey $dev 0 180 0"',
        'drop="0 $size flakey $dev 0 0 180 1 drop_writes"',
        f'{" ".join(fs.mkfs_argv(chr(34) + "$dev" + chr(34)))} >/dev/null || die "mkfs failed"',
        'dmsetup create "$name" --table "$live" || die "dmsetup create failed"',
        "created=1",
        'dmsetup mknodes "$name"  # without udev there is no /dev/mapper node otherwise',
        'mnt=$(mktemp -d) || die "mktemp failed"',
        f'{mount} || die "mount failed"']


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


def crash_and_remount(case: Case) -> list[str]:
    mount = mount_command(FILESYSTEMS[case.fs])
    return [
        "# the power cut: every write from here on is dropped",
        'table "$drop" || die "could not load the drop_writes table"',
        'umount "$mnt" || die "umount failed"',
        'table "$live" || die "could not load the pass-through table"',
        f"if ! {mount}; then",
        f'\techo "FAIL: the recovery mount failed"; exit {EXIT_FOUND}',
        "fi"]


def verdict(case: Case) -> list[str]:
    return [
        'if [ "$failed" -gt 0 ]; then',
        f'\techo "FAIL: $failed owed fact(s) wrong after a crash right after point {case.point} of {case.ident} on {case.fs}"',
        f"\texit {EXIT_FOUND}",
        "fi",
        "echo PASS",
        "exit 0"]


def checking(case: Case) -> str:
    """The script's last part: with `mnt` the recovered filesystem's mount point and `failed`
    0, it checks what the point owes, prints the verdict and exits 0 or 1."""
    found = checks(case)
    lines = [reader_functions("$mnt", "getfattr"), CHECKS, "# what the point owes",
             *(check_calls(found, "check", "held") or ["# (nothing)"]), "", *verdict(case)]
    return "\n".join(lines) + "\n"


def script(case: Case) -> str:
    """The sh reproducer of `case`."""
    body = [*header(case, checks(case)), "", PRELUDE, *preflight(case), "", *make_and_mount(case), "",
            *guarded(setup_lines(case, TOOLS) + op_lines(case, TOOLS)), "", *crash_and_remount(case), ""]
    return "\n".join(body) + "\n" + checking(case)
