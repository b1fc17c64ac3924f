"""Crash states checked per minute: the batched checker guest against one boot per state.

    .venv/bin/python bench/crash_states.py [--runs 3] [--states 32] [--single 6] [--fs xfs]

Records one fsync-heavy workload on a 512 MiB disk, then times building and checking crash
states (reorder model) both ways, in the same run, and reports each rate's median and their
ratio. Run by hand or `make bench`; never asserted in tests.
"""

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from plugpull.lab.checker import Checker, default_workers
from plugpull.guest.config import Accel
from plugpull.lab.crash import state_cuts
from plugpull.lab.fs import filesystem, mode
from plugpull.guest.rig import prepare_rig
from plugpull.lab.judge import StateJob, judge
from plugpull.lab.record import Trigger, record
from plugpull.lab.testbed import BedSpec
from plugpull.lab.workloads import FsyncFiles
from plugpull.powerloss.writelog import iter_entries


def rate(rec, entries, cuts, checker, scratch: Path, wl) -> tuple[float, dict]:
    """States per minute for building and checking `cuts`, and the verdict counts."""
    started = time.monotonic()
    judged = judge(rec, [StateJob("reorder", cut) for cut in cuts], checker, wl, 1, scratch, entries)
    elapsed = time.monotonic() - started
    for j in judged:
        j.state.remove()
    return 60 * len(cuts) / elapsed, dict(Counter(str(j.verdict.verdict) for j in judged))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--states", type=int, default=32, help="states per run on the fast path")
    ap.add_argument("--single", type=int, default=6, help="states per run, one boot each")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=default_workers(), help="checker guests at once")
    ap.add_argument("--fs", default="xfs")
    ap.add_argument("--accel", type=Accel, choices=list(Accel), default=Accel.AUTO)
    args = ap.parse_args()
    rig = prepare_rig(args.accel)
    fs = filesystem(args.fs)
    wl = FsyncFiles(count=60, seed=1)
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
        tmp = Path(tmp)
        rec = record(tmp / "record", BedSpec(fs, mode("barrier"), wl, 512), Trigger.parse("acks:50"), rig)
        entries = list(iter_entries(rec.log))
        print(f"{args.fs} 512 MiB, {rig.accel}: recorded {len(entries)} log entries, {len(rec.acks)} acks")
        cuts = state_cuts(entries, args.states, seed=1)
        fast, batched, single = [], [], []
        for run in range(args.runs):
            r, counts = rate(rec, entries, cuts, Checker(rig, fs, batch=args.batch), tmp, wl)
            batched.append(r)
            print(f"run {run + 1}: batched ({args.batch}/boot) {r:6.1f} states/min  {counts}", flush=True)
            checker = Checker(rig, fs, batch=args.batch // args.workers, workers=args.workers)
            r, counts = rate(rec, entries, cuts, checker, tmp, wl)
            fast.append(r)
            print(f"run {run + 1}: batched on {args.workers} guests {r:6.1f} states/min  {counts}", flush=True)
            r, counts = rate(rec, entries, cuts[: args.single], Checker(rig, fs, batch=1), tmp, wl)
            single.append(r)
            print(f"run {run + 1}: one boot per state {r:6.1f} states/min  {counts}", flush=True)
    f, b, s = statistics.median(fast), statistics.median(batched), statistics.median(single)
    print(f"median of {args.runs}: {args.workers} guests {f:.1f} states/min, one guest {b:.1f}, "
          f"one boot per state {s:.1f}; ratios {f / s:.1f}x and {b / s:.1f}x over one boot per state")
    return 0


if __name__ == "__main__":
    sys.exit(main())
