"""The reproducer as a POSIX sh script (busybox sh, dash): `sh repro.sh DEVICE`, as root.

It makes the filesystem on DEVICE (erasing it), puts a dm-flakey device over it, runs the
setup and `sync`, then the operations; right after the chosen point's persistence call it
makes the flakey device drop every write (`dmsetup suspend --nolockfs`, a `drop_writes`
table, resume), unmounts, loads the pass-through table, mounts (the filesystem recovers as
after a power cut) and checks what the point owes. It prints `PASS`, or one `FAIL:` line per
wrong fact and a `FAIL:` summary. Exit: 0 PASS, 1 FAIL, 2 bad usage or a missing tool, 3 a
step before the check failed (no verdict). The mount point and the dm devices go on every
path out.

The `delay` form puts a dm-delay device above the flakey one and the filesystem on it: writes
wait `DELAY_MS` there, reads and flushes do not. A write the persistence call did not wait
for is still held in it when the call returns, and the drop loses it every time; a call that
waits for its writes takes longer instead and keeps them (DESIGN.md fact 17)."""

from plugpull.reproducer import ReproducerCase
from plugpull.reproducer.checks import Checks, check_calls, checks, comment, reader_functions
from plugpull.reproducer.profiles import header_lines, mount_command, sh_control, sh_mkfs, sh_mount
from plugpull.reproducer.steps import Tools, needs_setfattr, op_lines, setup_lines
from plugpull.testbed.fs import FILESYSTEMS

TOOLS = Tools('"$mnt"', "xfs_io", "setfattr", "rm -f")
EXIT_FOUND, EXIT_USAGE, EXIT_NO_VERDICT = 1, 2, 3
DELAY_MS = 2000  # longer than any write takes under TCG, and than starting dmsetup on a loaded one (600 was not)

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

apart() {  # apart NAME NAME: the two, where both are there, are not one inode
	case "$(kind_of "$1") $(kind_of "$2")" in *absent*|*dir*) return 0 ;; esac
	if [ "$(stat -c %i "$mnt/$1")" = "$(stat -c %i "$mnt/$2")" ]; then
		wrong "$1 and $2 are one inode (link count $(stat -c %h "$mnt/$1")), which no step of the workload makes them"
	fi
}
"""


METHOD = {
    "flakey": ["# Method (fstests' dm-flakey): right after the point's persistence call every write is",
               "# dropped, the filesystem is unmounted and mounted again: what the disk had then is",
               "# what a power cut would have left."],
    "delay": ["# Method: the filesystem sits on dm-delay (writes held %d ms, reads and flushes not) above" % DELAY_MS,
              "# dm-flakey. Right after the point's persistence call every write is dropped: a write",
              "# the call did not wait for is still held then and is lost, as a disk cache may lose a",
              "# write no flush covered. The filesystem is unmounted and mounted again (recovery)."],
}


def header(case: ReproducerCase, found: Checks, form: str = "flakey") -> list[str]:
    targets = "dm-flakey and dm-delay targets" if form == "delay" else "dm-flakey target"
    return ["#!/bin/sh",
            f"# Reproducer: {case.title()}.",
            f"# Workload: {case.whole.text()}",
            "# Usage, as root: sh THIS_SCRIPT DEVICE",
            "# EVERYTHING ON DEVICE IS ERASED: the script makes a new filesystem on it.",
            f"# Needs: dmsetup and the {targets}, xfs_io, {' '.join(FILESYSTEMS[case.fs].mkfs[:1])}, mount,",
            "# and stat, readlink, md5sum, blockdev, mktemp" + (", setfattr, getfattr." if needs_setfattr(case) else "."),
            *header_lines(FILESYSTEMS[case.fs]),
            *METHOD[form],
            *comment(found, case),
            "# Prints PASS or FAIL lines; exit 0 PASS, 1 FAIL, 2 bad usage or a missing tool,",
            "# 3 a step before the check failed (no verdict)."]


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


def preflight(case: ReproducerCase, form: str = "flakey") -> list[str]:
    return [*usage_and_tools(["dmsetup", *case_tools(case)]),
            *dm_targets("flakey", *(["delay"] if form == "delay" else []))]


def delay_device() -> list[str]:
    """A dm-delay device over the flakey one: writes held DELAY_MS, reads and flushes not."""
    lower = '/dev/mapper/$name'
    return [f'held="0 $size delay {lower} 0 0 {lower} 0 {DELAY_MS} {lower} 0 0"',
            'dmsetup create "$name-delay" --table "$held" || die "dmsetup create (dm-delay) failed"',
            "delayed=1",
            'dmsetup mknodes "$name-delay"']


def make_and_mount(case: ReproducerCase, form: str = "flakey") -> list[str]:
    """The filesystem made on the device, the dm devices over it, mounted (a profile's control
    first: profiles.sh_control)."""
    fs = FILESYSTEMS[case.fs]
    top = '"/dev/mapper/$name-delay"' if form == "delay" else '"/dev/mapper/$name"'
    control = sh_control(fs)
    return [
        'size=$(blockdev --getsz "$dev") || die "blockdev --getsz $dev failed"',
        'live="0 $size flakey $dev 0 180 0"',
        'drop="0 $size flakey $dev 0 0 180 1 drop_writes"',
        *control,
        sh_mkfs(fs),
        'dmsetup create "$name" --table "$live" || die "dmsetup create failed"',
        "created=1",
        'dmsetup mknodes "$name"  # without udev there is no /dev/mapper node otherwise',
        *(delay_device() if form == "delay" else []),
        *([] if control else ['mnt=$(mktemp -d) || die "mktemp failed"']),
        sh_mount(fs, top)]


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
    """Shell lines around the drop in the delay form: a drop that came DELAY_MS or more after the
    persistence call returned (a slow or loaded machine) may have let a write the call did not
    wait for reach the disk, so a PASS would say nothing: `refuse` then ends the run, with the
    milliseconds in `$late`. /proc/uptime's hundredths, read by a builtin (no process started)."""
    return ['read -r dropped _ </proc/uptime',
            'late=$(( ((${dropped%.*} - ${returned%.*}) * 100 + 1${dropped#*.} - 1${returned#*.}) * 10 ))',
            f'if [ "$late" -ge {DELAY_MS} ]; then {refuse}; fi']


def crash_and_remount(case: ReproducerCase, form: str = "flakey") -> list[str]:
    mount = mount_command(FILESYSTEMS[case.fs])
    undelay = ['remove "$name-delay" || die "could not remove the dm-delay device"', "delayed="]
    too_late = ('dmsetup resume "$name"; '
                f'echo "no verdict: the writes were dropped $late ms after the call returned, not within the '
                f'{DELAY_MS} ms they are held (a slow or loaded machine)" >&2; exit {EXIT_NO_VERDICT}')
    delay = form == "delay"
    return [
        "# the power cut: every write from here on is dropped" + (", and those still held" if delay else ""),
        *(["read -r returned _ </proc/uptime",
           'dmsetup suspend --nolockfs "$name" || die "could not suspend the flakey device"',
           *late_drop(too_late),
           "# the writes let through from here on wait for the resume, and meet the drop table",
           'dmsetup load "$name" --table "$drop" && dmsetup resume "$name" || die "could not load the drop_writes table"']
          if delay else ['table "$drop" || die "could not load the drop_writes table"']),
        'umount "$mnt" || die "umount failed"',
        *(undelay if form == "delay" else []),
        'table "$live" || die "could not load the pass-through table"',
        f"if ! {mount}; then",
        f'\techo "FAIL: the recovery mount failed"; exit {EXIT_FOUND}',
        "fi"]


def verdict(case: ReproducerCase) -> list[str]:
    return [
        'if [ "$failed" -gt 0 ]; then',
        f'\techo "FAIL: $failed owed fact(s) wrong after a crash right after point {case.point} of {case.ident} on {case.fs}"',
        f"\texit {EXIT_FOUND}",
        "fi",
        "echo PASS",
        "exit 0"]


def checking(case: ReproducerCase) -> str:
    """The script's last part: with `mnt` the recovered filesystem's mount point and `failed`
    0, it checks what the point owes, prints the verdict and exits 0 or 1."""
    found = checks(case)
    lines = [reader_functions("$mnt", "getfattr"), CHECKS, "# what the point owes",
             *(check_calls(found, "check", "held", "apart") or ["# (nothing)"]), "", *verdict(case)]
    return "\n".join(lines) + "\n"


def script(case: ReproducerCase, form: str = "flakey") -> str:
    """The sh reproducer of `case`, in the `flakey` or `delay` form."""
    body = [*header(case, checks(case), form), "", PRELUDE, *preflight(case, form), "", *make_and_mount(case, form),
            "", *guarded(setup_lines(case, TOOLS) + op_lines(case, TOOLS)), "", *crash_and_remount(case, form), ""]
    return "\n".join(body) + "\n" + checking(case)
