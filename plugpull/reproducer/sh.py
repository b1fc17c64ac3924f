"""The reproducer of a form that drops writes (`flakey`, `delay`: a `shell.Drop`) as a POSIX
sh script (busybox sh, dash): `sh repro.sh DEVICE`, as root.

It makes the filesystem on DEVICE (erasing it), puts a dm-flakey device over it (and what the
form stacks above it), runs the setup and `sync`, then the operations; right after the chosen
point's persistence call it makes the flakey device drop every write (`dmsetup suspend
--nolockfs`, a `drop_writes` table, resume), unmounts, loads the pass-through table, mounts
(the filesystem recovers as after a power cut) and checks what the point owes. It prints
`PASS`, or one `FAIL:` line per wrong fact and a `FAIL:` summary. Exit: 0 PASS, 1 FAIL, 2 bad
usage or a missing tool, 3 a step before the check failed (no verdict). The mount point and
the dm devices go on every path out."""

from plugpull.reproducer import ReproducerCase, extents
from plugpull.reproducer.checks import Checks, check_calls, checks, comment, reader_functions
from plugpull.reproducer.profiles import header_lines, mount_command, sh_control, sh_mkfs, sh_mount
from plugpull.reproducer.shell import CHECKS, EXIT_FOUND, PRELUDE, SH_TOOLS as TOOLS, Drop, case_tools, dm_targets, \
    guarded, usage_and_tools
from plugpull.reproducer.steps import needs_setfattr, op_lines, setup_lines
from plugpull.testbed.fs import FILESYSTEMS


def header(case: ReproducerCase, found: Checks, drop: Drop) -> list[str]:
    targets = " and ".join(f"dm-{t}" for t in drop.targets) + (" targets" if len(drop.targets) > 1 else " target")
    return ["#!/bin/sh",
            f"# Reproducer: {case.title()}.",
            f"# Workload: {case.whole.text()}",
            "# Usage, as root: sh THIS_SCRIPT DEVICE",
            "# EVERYTHING ON DEVICE IS ERASED: the script makes a new filesystem on it.",
            f"# Needs: dmsetup and the {targets}, xfs_io, {' '.join(FILESYSTEMS[case.fs].mkfs[:1])}, mount,",
            "# and stat, readlink, md5sum, blockdev, mktemp" + (", setfattr, getfattr." if needs_setfattr(case) else "."),
            *header_lines(FILESYSTEMS[case.fs]),
            *drop.sh_method,
            *comment(found, case),
            "# Prints PASS or FAIL lines; exit 0 PASS, 1 FAIL, 2 bad usage or a missing tool,",
            "# 3 a step before the check failed (no verdict)."]


def preflight(case: ReproducerCase, drop: Drop) -> list[str]:
    return [*usage_and_tools(["dmsetup", *case_tools(case)]), *dm_targets(*drop.targets)]


def make_and_mount(case: ReproducerCase, drop: Drop) -> list[str]:
    """The filesystem made on the device, the dm devices over it, mounted (a profile's control
    first: profiles.sh_control)."""
    fs = FILESYSTEMS[case.fs]
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
        *drop.sh_device,
        *([] if control else ['mnt=$(mktemp -d) || die "mktemp failed"']),
        sh_mount(fs, drop.sh_top)]


def crash_and_remount(case: ReproducerCase, drop: Drop) -> list[str]:
    mount = mount_command(FILESYSTEMS[case.fs])
    return [
        f"# the power cut: every write from here on is dropped{drop.sh_cut}",
        *drop.sh_drop,
        'umount "$mnt" || die "umount failed"',
        *drop.sh_unstack,
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
    lines = [reader_functions("$mnt", "getfattr"), CHECKS, *([extents.sh_functions()] if found.needs_fiemap else []),
             "# what the point owes",
             *(check_calls(found, "check", "held", "apart") or ["# (nothing)"]), "", *verdict(case)]
    return "\n".join(lines) + "\n"


def script(case: ReproducerCase, drop: Drop) -> str:
    """The sh reproducer of `case`, in the form of `drop` (`flakey.FLAKEY`, `delay.DELAY`)."""
    body = [*header(case, checks(case), drop), "", PRELUDE, *preflight(case, drop), "", *make_and_mount(case, drop),
            "", *guarded(setup_lines(case, TOOLS) + op_lines(case, TOOLS)), "", *crash_and_remount(case, drop), ""]
    return "\n".join(body) + "\n" + checking(case)
