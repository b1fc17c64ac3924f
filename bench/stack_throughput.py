"""Throughput through storage stacks: fsync-files op/s per stack x mode, under the default
disk profile (hdd: dm-delay above the stack), each mode's rate against barrier on the same
stack, and each stack's barrier rate against no stack. One run, one measurement per cell;
`--again MODE` measures that mode a second time on every stack, so the table shows how far
two measurements of the same cell lie apart on this machine at this moment.

    .venv/bin/python bench/stack_throughput.py [--fs xfs] [--stacks ,lvm,dm-crypt,md-raid1] [--count 40] \
        [--again barrier]

A nobarrier/barrier ratio below 1 (nobarrier measured slower) is noise, not a cost of
barriers: it is printed as such, never as a ratio. Run by hand; never asserted in tests.
"""

import argparse
import sys
import tempfile
from pathlib import Path

from plugpull.guest.rig import prepare_rig
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.profiles import DEFAULT, profile
from plugpull.testbed.stack import Stack
from plugpull.testbed.workloads import workload
from plugpull.throughput.measure import measure

MODES = ("barrier", "nobarrier")


def rate(directory: Path, rig, fs: str, stack: str, mode_name: str, count: int) -> float:
    bed = BedSpec(filesystem(fs), mode(mode_name), workload("fsync-files", count=count), disk_mib=512,
                  profile=profile(DEFAULT), stack=Stack.parse(stack))
    [phase] = measure(directory, bed, rig).phases
    return phase.op_rate


def ratio(nobarrier: float, barrier: float) -> str:
    """nobarrier against barrier, or why it is no result."""
    return f"x{nobarrier / barrier:.2f}" if nobarrier >= barrier else "slower: noise"


def table(args, rates: dict, again: dict) -> list[str]:
    plain = rates.get(("", "barrier"))
    repeat = f"{args.again} again" if args.again else ""
    lines = [f"{args.fs}, fsync-files count={args.count}, disk profile {DEFAULT}",
             f"{'stack':10} {'barrier op/s':>12} {'nobarrier op/s':>14} {'nobarrier/barrier':>18} "
             f"{'barrier vs none':>16}" + (f" {repeat:>18} {'spread':>7}" if repeat else "")]
    for stack in args.stacks.split(","):
        b, n = rates[stack, "barrier"], rates[stack, "nobarrier"]
        versus = f"x{b / plain:.2f}" if plain else "-"
        line = f"{stack or 'none':10} {b:12.1f} {n:14.1f} {ratio(n, b):>18} {versus:>16}"
        if repeat:
            first, second = rates[stack, args.again], again[stack]
            line += f" {second:18.1f} {abs(second - first) / min(first, second):7.0%}"
        lines.append(line)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fs", default="xfs")
    ap.add_argument("--stacks", default=",lvm,dm-crypt,md-raid1", help="comma-separated; empty: no stack")
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--again", choices=MODES, help="measure this mode a second time on every stack")
    args = ap.parse_args()
    rig = prepare_rig()
    rates: dict[tuple[str, str], float] = {}
    again: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
        for stack in args.stacks.split(","):
            for m in MODES + ((args.again,) if args.again else ()):
                measured = rate(Path(tmp) / f"{stack or 'none'}-{m}-{len(rates)}", rig, args.fs, stack, m, args.count)
                if (stack, m) in rates:
                    again[stack] = measured
                else:
                    rates[stack, m] = measured
                print(f"{stack or 'none':10} {m:10} {measured:8.1f} op/s", file=sys.stderr)
    print("\n".join(table(args, rates, again)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
