"""Crash states checked per minute: the hot-plug checker guest, the batched one and one boot
per state.

    .venv/bin/python bench/crash_states.py [--runs 3] [--states 32] [--single 6] [--fs xfs] [--model reorder]

Records one fsync-heavy workload on a 512 MiB disk, then times building and checking crash
states both ways, in the same run, and reports each rate's median and their ratio: cuts per
minute (every cut gets a verdict) and distinct states per minute (cuts that persist the same
pieces share one check). Run by hand or `make bench`; never asserted in tests.
"""

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from plugpull.lab.checker import Checker, Plug, default_workers
from plugpull.guest.config import Accel
from plugpull.lab.crash import state_cuts
from plugpull.lab.fs import filesystem, mode
from plugpull.guest.rig import prepare_rig
from plugpull.lab.judge import StateJob, judge, remove_states
from plugpull.lab.record import Trigger, record
from plugpull.lab.testbed import BedSpec
from plugpull.lab.workloads import FsyncFiles
from plugpull.powerloss.writelog import iter_entries


def rate(rec, entries, cuts, checker, scratch: Path, wl, model: str) -> tuple[float, float, dict]:
    """Cuts and distinct states per minute for building and checking `cuts`, and the verdict
    counts."""
    started = time.monotonic()
    judged = judge(rec, [StateJob(model, cut) for cut in cuts], checker, wl, 1, scratch, entries)
    minutes = (time.monotonic() - started) / 60
    remove_states([j.state for j in judged])
    distinct = len({j.distinct for j in judged})
    return len(cuts) / minutes, distinct / minutes, dict(Counter(str(j.verdict.verdict) for j in judged))


def show(run: int, how: str, rates: tuple) -> None:
    print(f"run {run + 1}: {how:24} {rates[0]:6.1f} cuts/min, {rates[1]:6.1f} distinct/min  {rates[2]}", flush=True)


def medians(name: str, rates: list[tuple]) -> tuple[float, float]:
    cuts, distinct = statistics.median(r[0] for r in rates), statistics.median(r[1] for r in rates)
    print(f"  {name:24} {cuts:6.1f} cuts/min, {distinct:6.1f} distinct states/min")
    return cuts, distinct


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--states", type=int, default=32, help="states per run on the fast path")
    ap.add_argument("--single", type=int, default=6, help="states per run, one boot each")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=default_workers(), help="checker guests at once")
    ap.add_argument("--fs", default="xfs")
    ap.add_argument("--model", default="reorder", help="power-loss model of the states")
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
        fast, batched, single, hot, hot_fast = [], [], [], [], []
        for run in range(args.runs):
            batched.append(rate(rec, entries, cuts, Checker(rig, fs, batch=args.batch), tmp, wl, args.model))
            show(run, f"batched ({args.batch}/boot)", batched[-1])
            hot.append(rate(rec, entries, cuts, Checker(rig, fs, plug=Plug.HOT), tmp, wl, args.model))
            show(run, "hot-plugged, one guest", hot[-1])
            checker = Checker(rig, fs, batch=args.batch // args.workers, workers=args.workers)
            fast.append(rate(rec, entries, cuts, checker, tmp, wl, args.model))
            show(run, f"batched on {args.workers} guests", fast[-1])
            checker = Checker(rig, fs, plug=Plug.HOT, workers=args.workers)
            hot_fast.append(rate(rec, entries, cuts, checker, tmp, wl, args.model))
            show(run, f"hot-plugged on {args.workers} guests", hot_fast[-1])
            single.append(rate(rec, entries, cuts[: args.single], Checker(rig, fs, batch=1), tmp, wl, args.model))
            show(run, "one boot per state", single[-1])
    print(f"median of {args.runs}, {args.model}:")
    f, b, s = (medians(f"{args.workers} guests", fast)[1], medians("one guest", batched)[1],
               medians("one boot per state", single)[1])
    h, hf = medians("hot-plugged, one guest", hot)[1], medians(f"hot-plugged, {args.workers} guests", hot_fast)[1]
    print(f"distinct states: ratios {f / s:.1f}x and {b / s:.1f}x over one boot per state")
    print(f"hot-plugged against {args.batch} per boot: {h / b:.2f}x on one guest, {hf / f:.2f}x on {args.workers}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
