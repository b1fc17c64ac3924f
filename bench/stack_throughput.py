"""Throughput through storage stacks: fsync-files op/s per stack x mode, under the default
disk profile (hdd: dm-delay above the stack), each mode's rate against barrier on the same
stack, and each stack's barrier rate against no stack. One run, one measurement per cell.

    .venv/bin/python bench/stack_throughput.py [--fs xfs] [--stacks ,lvm,dm-crypt,md-raid1] [--count 40]

Run by hand; never asserted in tests.
"""

import argparse
import sys
import tempfile
from pathlib import Path

from plugpull.guest.rig import prepare_rig
from plugpull.lab.fs import filesystem, mode
from plugpull.lab.profiles import DEFAULT, profile
from plugpull.lab.stack import Stack
from plugpull.lab.testbed import BedSpec
from plugpull.lab.throughput import measure
from plugpull.lab.workloads import workload

MODES = ("barrier", "nobarrier")


def rate(directory: Path, rig, fs: str, stack: str, mode_name: str, count: int) -> float:
    bed = BedSpec(filesystem(fs), mode(mode_name), workload("fsync-files", count=count), disk_mib=512,
                  profile=profile(DEFAULT), stack=Stack.parse(stack))
    [phase] = measure(directory, bed, rig).phases
    return phase.op_rate


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fs", default="xfs")
    ap.add_argument("--stacks", default=",lvm,dm-crypt,md-raid1", help="comma-separated; empty: no stack")
    ap.add_argument("--count", type=int, default=40)
    args = ap.parse_args()
    rig = prepare_rig()
    rates: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
        for stack in args.stacks.split(","):
            for m in MODES:
                rates[stack, m] = rate(Path(tmp) / f"{stack or 'none'}-{m}", rig, args.fs, stack, m, args.count)
                print(f"{stack or 'none':10} {m:10} {rates[stack, m]:8.1f} op/s", file=sys.stderr)
    plain = rates.get(("", "barrier"))
    print(f"{args.fs}, fsync-files count={args.count}, disk profile {DEFAULT}")
    print(f"{'stack':10} {'barrier op/s':>12} {'nobarrier op/s':>14} {'nobarrier/barrier':>18} {'barrier vs none':>16}")
    for stack in args.stacks.split(","):
        b, n = rates[stack, "barrier"], rates[stack, "nobarrier"]
        versus = f"x{b / plain:.2f}" if plain else "-"
        print(f"{stack or 'none':10} {b:12.1f} {n:14.1f} {'x' + format(n / b, '.2f'):>18} {versus:>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
