"""Crash states checked per minute: the batched checker guests, the hot-plug ones booted and
restored from a saved guest (fsck on the host, or in the guest), and one boot per state; and a
checker's start to ready, booted against restored.

    .venv/bin/python bench/crash_states.py [--runs 3] [--states 32] [--single 6] [--fs xfs] [--model reorder]
                                           [--per-command 8] [--one-guest]

Records one fsync-heavy workload on a 512 MiB disk, then times building and checking crash
states every way, in the same run, and reports each rate's median and their ratios: cuts per
minute (every cut gets a verdict) and distinct states per minute (cuts that persist the same
pieces share one check), and the CPU seconds each distinct state cost this process and the
guests it ran (less sensitive than rates to a loaded host). Run by hand or `make bench`; never asserted in tests.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from plugpull.check.checker import Checker, Plug, default_workers
from plugpull.check.hotguest import HotGuest
from plugpull.crash.judge import StateJob, judge, remove_states
from plugpull.crash.record import Trigger, record
from plugpull.guest.contract.config import Accel
from plugpull.guest.rig import prepare_rig
from plugpull.guest.qemu.snapshot import ensure_saved
from plugpull.powerloss.cuts import state_cuts
from plugpull.powerloss.writelog import iter_entries
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.workloads import FsyncFiles


def cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended (the checker guests'
    QEMU and qemu-img): a state's cost that a loaded host changes less than its wall time."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def rate(rec, entries, cuts, checker, scratch: Path, wl, model: str) -> tuple[float, float, dict, float]:
    """Cuts and distinct states per minute for building and checking `cuts`, the verdict
    counts, and CPU seconds per distinct state."""
    started, cpu = time.monotonic(), cpu_seconds()
    judged = judge(rec, [StateJob(model, cut) for cut in cuts], checker, wl, 1, scratch, entries)
    minutes = (time.monotonic() - started) / 60
    cpu = cpu_seconds() - cpu
    remove_states([j.state for j in judged])
    distinct = len({j.distinct for j in judged})
    verdicts = dict(Counter(str(j.verdict.verdict) for j in judged))
    return len(cuts) / minutes, distinct / minutes, verdicts, cpu / distinct


def show(run: int, how: str, rates: tuple) -> None:
    print(f"run {run + 1}: {how:30} {rates[0]:6.1f} cuts/min, {rates[1]:6.1f} distinct/min, "
          f"{rates[3]:5.2f} CPU s/state  {rates[2]}", flush=True)


def medians(name: str, rates: list[tuple]) -> tuple[float, float]:
    cuts, distinct = statistics.median(r[0] for r in rates), statistics.median(r[1] for r in rates)
    cpu = statistics.median(r[3] for r in rates)
    print(f"  {name:30} {cuts:6.1f} cuts/min, {distinct:6.1f} distinct states/min, {cpu:5.2f} CPU s/state")
    return cuts, distinct


def ready_seconds(rig, restore) -> float:
    """Start to ready of one hot checker guest: booted (restore None) or restored."""
    with rig.backend.machine(HotGuest.SPEC, rig.image, rig.accel, name="bench", restore=restore) as m:
        return m.boot_seconds


def paths(args) -> list[tuple[str, dict]]:
    """The checker paths compared, as Checker arguments."""
    n = args.workers
    out = [(f"batched ({args.batch}/boot) on {n}", dict(batch=max(1, args.batch // n), workers=n)),
           (f"hot, booted, on {n}", dict(plug=Plug.HOT, workers=n, restore=False, per_command=args.per_command)),
           (f"hot, restored, on {n}", dict(plug=Plug.HOT, workers=n, per_command=args.per_command)),
           (f"hot, restored, 1/command, on {n}", dict(plug=Plug.HOT, workers=n, per_command=1)),
           (f"hot, restored, guest fsck, on {n}", dict(plug=Plug.HOT, workers=n, per_command=args.per_command,
                                                      host_fsck=False))]
    if args.one_guest:
        out += [(f"batched ({args.batch}/boot) on 1", dict(batch=args.batch)),
                ("hot, restored, on 1", dict(plug=Plug.HOT))]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--states", type=int, default=32, help="states per run on the fast path")
    ap.add_argument("--single", type=int, default=6, help="states per run, one boot each")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--per-command", type=int, default=8, help="hot path: states per guest command")
    ap.add_argument("--workers", type=int, default=default_workers(), help="checker guests at once")
    ap.add_argument("--one-guest", action="store_true", help="also the paths on one guest")
    ap.add_argument("--fs", default="xfs")
    ap.add_argument("--model", default="reorder", help="power-loss model of the states")
    ap.add_argument("--accel", type=Accel, choices=list(Accel), default=Accel.AUTO)
    args = ap.parse_args()
    rig = prepare_rig(args.accel)
    fs = filesystem(args.fs)
    wl = FsyncFiles(count=60, seed=1)
    saved = rig.backend.saved_state(HotGuest.SPEC, rig.image, rig.accel)
    ensure_saved(lambda: rig.backend.machine(HotGuest.SPEC, rig.image, rig.accel), saved)
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
        tmp = Path(tmp)
        rec = record(tmp / "record", BedSpec(fs, mode("barrier"), wl, 512), Trigger.parse("acks:50"), rig)
        entries = list(iter_entries(rec.log))
        print(f"{args.fs} 512 MiB, {rig.accel}: recorded {len(entries)} log entries, {len(rec.acks)} acks")
        cuts = state_cuts(entries, args.states, seed=1)
        rates = {name: [] for name, _ in paths(args)} | {"one boot per state": []}
        ready = {"boot": [], "restore": []}
        for run in range(args.runs):
            ready["boot"].append(ready_seconds(rig, None))
            ready["restore"].append(ready_seconds(rig, saved))
            print(f"run {run + 1}: checker ready in {ready['boot'][-1]:.2f} s booted, "
                  f"{ready['restore'][-1]:.2f} s restored", flush=True)
            for name, options in paths(args):
                rates[name].append(rate(rec, entries, cuts, Checker(rig, fs, **options), tmp, wl, args.model))
                show(run, name, rates[name][-1])
            single = rate(rec, entries, cuts[: args.single], Checker(rig, fs, batch=1), tmp, wl, args.model)
            rates["one boot per state"].append(single)
            show(run, "one boot per state", single)
    report(args, rates, ready)
    return 0


def report(args, rates: dict, ready: dict) -> None:
    print(f"median of {args.runs}, {args.model}:")
    distinct = {name: medians(name, values)[1] for name, values in rates.items()}
    boot, restore = statistics.median(ready["boot"]), statistics.median(ready["restore"])
    print(f"checker start to ready: booted {boot:.2f} s, restored {restore:.2f} s: restore {boot / restore:.1f}x "
          f"faster (spread: booted {min(ready['boot']):.2f}-{max(ready['boot']):.2f}, "
          f"restored {min(ready['restore']):.2f}-{max(ready['restore']):.2f})")
    n, single = args.workers, distinct["one boot per state"]
    batched, hot, restored = (distinct[name] for name, _ in paths(args)[:3])
    print(f"distinct states over one boot per state: batched {batched / single:.1f}x, hot booted "
          f"{hot / single:.1f}x, hot restored {restored / single:.1f}x")
    print(f"hot-plugged against {args.batch} per boot, on {n} guests: {hot / batched:.2f}x booted, "
          f"{restored / batched:.2f}x restored")
    spread = [r[1] for r in rates[paths(args)[2][0]]]
    print(f"hot restored on {n}: distinct states/min per run {', '.join(f'{x:.0f}' for x in spread)}")
    one_each = distinct[paths(args)[3][0]]
    print(f"hot restored, {args.per_command} states per guest command against 1: {restored / one_each:.2f}x")
    in_guest = distinct[paths(args)[4][0]]
    print(f"hot restored, fsck on the host against in the guest: {restored / in_guest:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
