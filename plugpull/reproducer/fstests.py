"""The reproducer of a form that drops writes (`flakey`, `delay`: a `shell.Drop`) as a test in
fstests' own form, for tests/generic/, and its golden output.

The test makes the scratch filesystem, puts dm-flakey over it (common/dmflakey, and what the
form stacks above it), runs the setup, `sync` and the operations, and right after the point's
persistence call drops every write and remounts (`_flakey_drop_and_remount`). It then prints one line per
checked fact: a fact owed as one value prints that value (`B/bar kind: file`), one owed as
any of several prints them all (`A/bar kind: absent or file`) when it holds, and a fact of a
regular file or a symlink is judged only where the path is one (`A/bar nlink (if a file)`).
What a correct filesystem prints is thus fixed: that is the golden `.out` file.

It is written for fstests as of 2025-12-18 (commit eb2ad950), where `_init_flakey` points
SCRATCH_DEV at the flakey device and `_scratch_mount` mounts it; on an older tree, where
`_mount_flakey` did, it takes that path instead (`flakey.FLAKEY_MOUNT`). Every mount that fails
stops the test, so the workload never runs on the root filesystem's mount point."""

from plugpull.reproducer import ReproducerCase, extents
from plugpull.reproducer.checks import Checks, check_calls, checks, comment, reader_functions
from plugpull.reproducer.profiles import fstests_mkfs
from plugpull.reproducer.shell import END, FSTESTS_TOOLS as TOOLS, Drop, cleanup_lines, copyright_lines, \
    own_mount_options, requirements
from plugpull.reproducer.steps import needs_setfattr, op_lines, setup_lines
from plugpull.testbed.fs import FILESYSTEMS

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


def _either(words) -> str:
    return " or ".join(w or "none" for w in words)


def golden_lines(found: Checks) -> list[str]:
    """What `show` and `show_held` print on a filesystem that keeps every owed fact."""
    lines = []
    for c in found.facts:
        label = f"{c.path} {c.fact}" + ("" if c.fact == "kind" else f" (if a {c.need})")
        lines.append(f"{label}: {'cover ' if c.fact == 'extents' else ''}{_either(c.allowed)}")
    lines += [f"the {h.kind} owed at {h.names[0]}: under one of {' '.join(h.names)}" for h in found.held]
    return lines


def header(case: ReproducerCase, found: Checks, number: str, drop: Drop) -> list[str]:
    return [*copyright_lines(number),
            f"# {case.title()}, found by plugpull's generated workloads.",
            f"# Workload: {case.whole.text()}", *drop.fstests_method,
            *comment(found, case), "#"]


def preamble(case: ReproducerCase, drop: Drop) -> list[str]:
    attrs = needs_setfattr(case)
    return [". ./common/preamble", "_begin_fstest auto quick log", "", *cleanup_lines(*drop.fstests_cleanup),
            ". ./common/dmflakey", *drop.fstests_common, *([". ./common/attr"] if attrs else []),
            "", *requirements(case, drop.targets, fiemap=checks(case).needs_fiemap), drop.fstests_helpers,
            f'{fstests_mkfs(FILESYSTEMS[case.fs])} >>$seqres.full 2>&1 || _fail "mkfs failed"',
            "_require_metadata_journaling $SCRATCH_DEV", *own_mount_options(case), *drop.fstests_stack, ""]


def printing(case: ReproducerCase) -> str:
    """The test's part after the remount: it prints the checked facts (`golden` is what a
    filesystem that keeps them prints)."""
    found = checks(case)
    lines = [reader_functions("$SCRATCH_MNT", "$GETFATTR_PROG"), SHOW,
             *([extents.fstests_functions()] if found.needs_fiemap else []),
             *(check_calls(found, "show", "show_held", "show_apart") or ["# nothing is owed"])]
    return "\n".join(lines) + "\n"


def test(case: ReproducerCase, number: str = "NNN", *, drop: Drop) -> str:
    """The fstests test of `case`, numbered `number`, in the form of `drop` (`flakey.FLAKEY`,
    `delay.DELAY`)."""
    body = [*header(case, checks(case), number, drop), *preamble(case, drop), *setup_lines(case, TOOLS),
            *op_lines(case, TOOLS), "", *drop.fstests_crash, "", printing(case), drop.fstests_unmount, *END]
    return "\n".join(body) + "\n"


def golden(case: ReproducerCase, number: str = "NNN") -> str:
    """The test's golden output: what a filesystem that keeps every owed fact prints."""
    return "\n".join([f"QA output created by {number}", *golden_lines(checks(case))]) + "\n"
