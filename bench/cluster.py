"""The same recording's crash states checked on this machine's checker guests, by a Dask
cluster of 1 and of 2 `plugpull worker`s on loopback (spawned here, stopped at the end) and,
with --remote, on a libvirt host reached through its connection alone (a second libvirtd on
loopback TCP, states uploaded as volumes), in one run. Verdicts and digests must match.

    .venv/bin/python bench/cluster.py [--states 24] [--rounds 1] [--remote]

Prints, per path, the distinct states per minute of checking and the bytes sent per distinct
state, and each one's ratio to this machine's; with `--rounds N`, this machine and each
cluster judge the recording N times in a row (as a matrix's cells follow each other on the same workers) and
the rate is over all N; run by hand, never asserted in tests. Bytes:
the cluster's payload (the record bundle once per worker, the tasks, the observations back,
pickled; Dask's framing left out); the remote path's, the data of each uploaded state (its
allocated bytes: holes go as holes).
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from plugpull.check.checker import Checker, Plug
from plugpull.cluster.bundle import pack
from plugpull.cluster.crash_coordinator import ClusterJudge
from plugpull.cluster.spawn import spawned
from plugpull.crash.judge import build_state, judge, plan_states, remove_states
from plugpull.crash.record import record
from plugpull.crash.crashrun import crash_jobs
from plugpull.crash.spec import CrashSpec
from plugpull.guest.rig import Rig, prepare_rig
from plugpull.powerloss.writelog import iter_entries
from plugpull.diskspace import allocated_bytes


def timed(judging, rec, jobs, checker, plan, spec, entries, state_dir, rounds: int = 1):
    """Seconds for `rounds` judgings of the recording, and the results (the same each round, or
    the first of a round that differs)."""
    seconds, first = 0.0, None
    for _ in range(rounds):
        started = time.monotonic()
        judged = judging(rec, jobs, checker, plan.workload, spec.seed, state_dir, entries)
        seconds += time.monotonic() - started
        results = [(str(j.verdict.verdict), j.state.digest()) for j in judged]
        remove_states([j.state for j in judged])
        if first not in (None, results):
            return seconds, results
        first = results
    return seconds, first


def state_data(rec, jobs, spec, entries, where: Path) -> int:
    """The data the remote path uploads: every distinct state's allocated bytes."""
    total = 0
    for i, pieces in enumerate(plan_states(rec, jobs, spec.seed, entries).plans):
        state = build_state(rec, pieces, where / f"s{i}.img")
        total += sum(allocated_bytes(p) for p in state.images)
        state.remove()
    return total


def on_remote(rig, rec, jobs, plan, spec, entries, state_dir):
    from plugpull.guest.libvirt.instance import start_tcp_instance
    from plugpull.guest.libvirt.machine import LibvirtBackend
    second = start_tcp_instance()
    try:
        host = LibvirtBackend(second.uri, second.qemu_pid_dir, remote=True)
        checker = Checker(Rig(rig.image, rig.accel, rig.backend, (host,)), plan.fs, batch=8, workers=1)
        return timed(judge, rec, jobs, checker, plan, spec, entries, state_dir)
    finally:
        second.stop()


def row(name, seconds, distinct, sent, base_rate):
    rate = distinct / seconds * 60
    return f"| {name} | {rate:.0f} | {rate / base_rate:.2f}x | {sent / distinct / 1024:.1f} KiB |"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=1, help="judgings of the recording per cluster, in a row")
    ap.add_argument("--remote", action="store_true", help="also the libvirt remote path (a second libvirtd)")
    args = ap.parse_args()
    spec = CrashSpec(fs="ext4", mode="nobarrier", workload="fsync-files", params=(("count", 20),),
                     models=("reorder",), states=args.states, seed=1)
    plan = spec.resolve()
    rig = prepare_rig()
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
        tmp = Path(tmp)
        rec = record(tmp / "record", plan.recording_bed, plan.trigger, rig)
        entries = list(iter_entries(rec.log))
        jobs = crash_jobs(rec, entries, spec, plan.models)
        distinct = len(plan_states(rec, jobs, spec.seed, entries).plans)
        checker = Checker(rig, plan.fs, plug=Plug.HOT, workers=2)
        runs = {"this machine, 2 guests": (*timed(judge, rec, jobs, checker, plan, spec, entries, tmp / "s",
                                                                args.rounds), 0)}
        for n in (1, 2):
            with spawned(n, tmp / f"cluster{n}", accel=str(rig.accel)) as cluster:
                judging = ClusterJudge(cluster.address)
                seconds, results = timed(judging, rec, jobs, checker, plan, spec, entries, tmp / "s", args.rounds)
                runs[f"--cluster, {n} worker{'s' * (n > 1)}"] = (seconds, results, sum(
                    v for k, v in judging.wire.items() if k != "workers"))
        if args.remote:
            runs["--hosts, libvirt remote"] = (*on_remote(rig, rec, jobs, plan, spec, entries, tmp / "s"),
                                               state_data(rec, jobs, spec, entries, tmp))
        bundle = len(pack(rec).data)
    reference = runs["this machine, 2 guests"][1]
    base_rate = distinct / runs["this machine, 2 guests"][0] * 60
    print(f"{distinct} distinct states of {len(jobs)} cuts, {args.rounds} round(s) per cluster, {rig.accel}; "
          f"record bundle {bundle / 1024:.0f} KiB")
    print("| path | distinct states/min | vs this machine | bytes sent per state |\n|---|---|---|---|")
    for name, (seconds, results, sent) in runs.items():
        print(row(name, seconds, distinct, sent, base_rate) + ("" if results == reference else " RESULTS DIFFER"))
    return 0 if all(r[1] == reference for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
