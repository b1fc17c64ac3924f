"""What a hunt's steps cost, in one run: the same sampled workloads hunted as built (chunks of
16 recorded in one guest and checked together, the next chunk recorded while one is checked),
with recording and checking one after the other, one workload a chunk, and, for a few of
them, one `plugpull crash --workload gen:ID` each (a recording guest booted per workload: the
path before hunts).

    .venv/bin/python bench/hunt.py [--fs ext4] [--mode barrier] [--sample 48] [--crash 6]

Prints per path the workloads and distinct states per minute, the recording seconds per
workload and the checking seconds per distinct state, and each path's ratio to the hunt as
built. Run by hand; never asserted in tests. The machine is shared: say what ran beside it.
"""

import argparse
import tempfile
import time
from pathlib import Path

from plugpull.crash.crashrun import run_crash
from plugpull.crash.spec import CrashSpec
from plugpull.generate.space import Space
from plugpull.guest.rig import prepare_rig
from plugpull.hunt.hunter import HuntSpec, hunt, workload_ids


def hunted(rig, space, fs, mode, sample, chunk, overlap, scratch: Path) -> dict:
    spec = HuntSpec(1, fs, mode, sample=sample, chunk=chunk, overlap=overlap)
    run = hunt(spec, space, [rig], scratch / f"hunt-{chunk}-{overlap}")
    seconds = run.wall_s
    return {"workloads": run.new, "distinct": run.distinct, "seconds": seconds,
            "record_per_workload": run.record_s / max(run.new, 1), "check_per_state": run.check_s / max(run.distinct, 1)}


def crashed(rig, fs, mode, ids, scratch: Path) -> dict:
    distinct, record_s, check_s = 0, 0.0, 0.0
    for ident in ids:
        spec = CrashSpec(fs=fs, mode=mode, workload=f"gen:{ident}", trigger="end", cuts="flushes,end",
                         models=("prefix", "reorder", "drop-unflushed"), disk_mib=64 if fs == "ext4" else 300)
        run = run_crash(spec, rig, scratch / f"crash-{ident}")
        distinct += run.distinct or 0
        record_s += run.timing.record_s
        check_s += run.timing.check_s
    return {"workloads": len(ids), "distinct": distinct, "seconds": record_s + check_s,
            "record_per_workload": record_s / len(ids), "check_per_state": check_s / max(distinct, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fs", default="ext4")
    p.add_argument("--mode", default="barrier")
    p.add_argument("--sample", type=int, default=48)
    p.add_argument("--crash", type=int, default=6, help="workloads run one `crash` each")
    args = p.parse_args()
    rig = prepare_rig()
    space = Space(1)
    ids = workload_ids(space, args.sample, 1)
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-hunt-") as tmp:
        scratch = Path(tmp)
        rows = {"hunt, chunks of 16": hunted(rig, space, args.fs, args.mode, args.sample, 16, True, scratch),
                "hunt, no overlap": hunted(rig, space, args.fs, args.mode, args.sample, 16, False, scratch),
                "hunt, one workload a chunk": hunted(rig, space, args.fs, args.mode, args.sample, 1, False, scratch),
                f"crash per workload ({args.crash})": crashed(rig, args.fs, args.mode, ids[:args.crash], scratch)}
    base = rows["hunt, chunks of 16"]
    base_rate = base["distinct"] / base["seconds"]
    print(f"{args.fs} {args.mode}, seq 1 sample {args.sample} seed 1, {rig.accel}, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{'path':34} {'workloads/min':>13} {'distinct/min':>12} {'record s/wl':>11} {'check s/state':>13} {'vs hunt':>8}")
    for name, r in rows.items():
        rate = r["distinct"] / r["seconds"]
        print(f"{name:34} {r['workloads'] * 60 / r['seconds']:13.1f} {rate * 60:12.0f} {r['record_per_workload']:11.2f} "
              f"{r['check_per_state']:13.3f} {rate / base_rate:7.2f}x")


if __name__ == "__main__":
    main()
