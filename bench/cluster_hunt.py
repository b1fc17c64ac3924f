"""One hunt sample three ways in one run: locally (`hunt`), on a Dask cluster of 1 and of 2
`plugpull worker`s on loopback (spawned here, each with its own work dir, stopped at the
end), each into a fresh out dir. Prints, per way, workloads and distinct states per minute,
bytes sent per workload, the coordinator's CPU seconds per workload and its journal bytes per
workload, and whether its failing workloads are the local hunt's.

    .venv/bin/python bench/cluster_hunt.py [--seq 1] [--sample 24] [--fs ext4] [--mode barrier] [--seed 1] [--chunk 8]

Bytes sent: each task's arguments (the hunt's settings, the kernel, the chunk's ids, the
image key) and each answer merged (its journal lines, the packed artifacts of its failing
workloads, its figures), pickled; Dask's framing and messages (heartbeats, the scheduler's
bookkeeping, the task's key and resources) are left out, and so is the worker's own traffic
to the scheduler. CPU: `getrusage(RUSAGE_SELF)` of this process around the cluster hunt (the
coordinator, with its Dask client's threads); the workers and their guests are other
processes and are not counted. For the local hunt the same figure is shown (its guests are
child processes, not counted either). Run by hand; never asserted in tests. The machine is
shared: say what ran beside it.
"""

import argparse
import json
import os
import pickle
import resource
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from plugpull.cluster import hunt_coordinator
from plugpull.cluster.spawn import spawned
from plugpull.generate.space import Space
from plugpull.guest.rig import prepare_rig
from plugpull.hunt.journal import JOURNAL
from plugpull.hunt.hunter import HuntSpec, hunt


class Wire:
    """The pickled bytes of the tasks sent and the answers merged."""

    def __init__(self):
        self.sent = 0
        self.back = 0


@contextmanager
def counted(wire: Wire):
    """The coordinator's Client and Merge, counting what goes out and what comes back."""
    client_class, merge_class = hunt_coordinator.Client, hunt_coordinator.Merge

    class CountingClient(client_class):
        def submit(self, func, *args, **kwargs):
            wire.sent += len(pickle.dumps((func, args)))
            return super().submit(func, *args, **kwargs)

    class CountingMerge(merge_class):
        def __call__(self, result, chunk=None):
            wire.back += len(pickle.dumps(result))
            return super().__call__(result, chunk)

    hunt_coordinator.Client, hunt_coordinator.Merge = CountingClient, CountingMerge
    try:
        yield
    finally:
        hunt_coordinator.Client, hunt_coordinator.Merge = client_class, merge_class


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measured(hunting, spec, space, rig, out: Path, wire: Wire | None = None) -> dict:
    cpu = cpu_seconds()
    run = hunting(spec, space, [rig], out)
    cpu = cpu_seconds() - cpu
    lines = [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()]
    return {"workloads": run.new, "distinct": run.distinct, "seconds": run.wall_s, "cpu": cpu,
            "bytes": 0 if wire is None else wire.sent + wire.back, "journal": (out / JOURNAL).stat().st_size,
            "failing": {line["id"] for line in lines if line.get("failing")},
            "infra": len(run.infra)}


def on_cluster(n: int, spec, space, rig, tmp: Path) -> dict:
    wire = Wire()
    with spawned(n, tmp / f"cluster{n}", accel=str(rig.accel)) as cluster, counted(wire):
        return measured(hunt_coordinator.ClusterHunt(cluster.address), spec, space, rig, tmp / f"out-cluster{n}", wire)


def row(name: str, r: dict, failing: set) -> str:
    per = max(r["workloads"], 1)
    agree = "yes" if r["failing"] == failing else f"NO ({len(r['failing'])} failing)"
    return (f"| {name} | {r['workloads'] * 60 / r['seconds']:.1f} | {r['distinct'] * 60 / r['seconds']:.0f} | "
            f"{r['bytes'] / per / 1024:.1f} KiB | {r['cpu'] / per:.3f} | {r['journal'] / per:.0f} B | "
            f"{r['seconds']:.0f} s | {agree} |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", type=int, default=1)
    p.add_argument("--sample", type=int, default=24)
    p.add_argument("--fs", default="ext4")
    p.add_argument("--mode", default="barrier")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--chunk", type=int, default=8, help="workloads per chunk (8: three chunks of 24, both workers busy)")
    args = p.parse_args()
    spec = HuntSpec(args.seq, args.fs, args.mode, sample=args.sample, seed=args.seed, chunk=args.chunk)
    space = Space(args.seq)
    rig = prepare_rig()
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-cluster-hunt-") as tmp:
        tmp = Path(tmp)
        rows = {"local `hunt`": measured(hunt, spec, space, rig, tmp / "out-local")}
        for n in (1, 2):
            rows[f"`--cluster`, {n} worker{'s' * (n > 1)}"] = on_cluster(n, spec, space, rig, tmp)
    failing = rows["local `hunt`"]["failing"]
    print(f"{args.fs} {args.mode}, seq {args.seq} sample {args.sample} seed {args.seed}, chunk {args.chunk}, "
          f"{rig.accel}, {time.strftime('%Y-%m-%d %H:%M %Z')}, load {os.getloadavg()[0]:.1f}; "
          f"{len(failing)} failing locally")
    print("| way | workloads/min | distinct states/min | bytes sent per workload | coordinator CPU s per workload "
          "| journal bytes per workload | wall | failing as local |\n|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(row(name, r, failing) + (f" ({r['infra']} infra)" if r["infra"] else ""))
    return 0 if all(r["failing"] == failing and not r["infra"] for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
