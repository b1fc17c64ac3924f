"""Today's hunt path and the new one, side by side in one run, per filesystem: the same seq-2
sample hunted with each workload's recording disk plugged into the recording guest and out
again (today's), and with one disk the recording guest keeps plugged in, given the formatted
image's bytes before each workload (new, `hunt.record`); both check states in the checker
guests' slots (`check.slots`), and the host's fsck reads every distinct state on both. With
`--fsck-failing`, a third path: the new one, and fsck only on the states the mount or the
oracle judged not clean (`--fsck failing`).

    .venv/bin/python bench/hunt_paths.py [--fs ext4,xfs,btrfs] [--sample 200] [--seed 1] [--fsck-failing]

Prints per filesystem and path the workloads and distinct states per minute and the CPU
seconds a distinct state (this process and its children, the guests' QEMUs among them: a
ratio that holds on a shared machine, where wall time does not), then whether the paths
failed the same workloads under the same rules (a state that only fsck would call damaged is
what `failing` can miss: docs/hunt.md), and ends with one line per filesystem that a script
can read:

    FS: N distinct states/min (new), M (today's), xR

The two paths of a filesystem run one after the other, in that order, each from a fresh out
dir. Run by hand (`make bench-hunt`); never asserted in tests. The machine is shared: say what
ran beside it.
"""

import argparse
import tempfile
import time
from pathlib import Path

from hunt_cpu import cpu

from plugpull.check.fsckchoice import fsck_choice
from plugpull.generate.space import Space
from plugpull.guest.rig import prepare_rig
from plugpull.hunt.hunter import HuntSpec, hunt

PATHS = {"today's": (False, "always"), "new": (True, "always"), "failing": (True, "failing")}  # kept disk, --fsck


def hunted(rig, space, fs: str, path: str, sample: int, seed: int, out: Path) -> dict:
    kept, fsck = PATHS[path]
    spec = HuntSpec(2, fs, sample=sample, seed=seed, fsck=fsck_choice(fsck), keep_disk=kept)
    before = sum(cpu())
    run = hunt(spec, space, [rig], out)
    failing = {line["id"]: tuple(sorted(line["rules"])) for line in run.lines if line["failing"]}
    return {"workloads": run.new, "distinct": run.distinct, "seconds": run.wall_s, "failing": failing,
            "cpu": sum(cpu()) - before}


def per_minute(row: dict, key: str) -> float:
    return row[key] * 60 / row["seconds"] if row["seconds"] else 0.0


def agreement(today: dict, new: dict) -> str:
    if today == new:
        return f"the same {len(today)} failing workload(s), the same rules"
    only_today = sorted(set(today) - set(new))
    only_new = sorted(set(new) - set(today))
    other_rules = sorted(i for i in set(today) & set(new) if today[i] != new[i])
    return (f"DIFFERENT: failing only today's {only_today or '-'}, only new {only_new or '-'}, "
            f"other rules {other_rules or '-'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fs", default="ext4,xfs,btrfs")
    p.add_argument("--sample", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fsck-failing", action="store_true", help="a third path: the new one and --fsck failing")
    args = p.parse_args()
    rig, space, results = prepare_rig(), Space(2), {}
    paths = list(PATHS) if args.fsck_failing else ["today's", "new"]
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-hunt-paths-") as tmp:
        for fs in args.fs.split(","):
            for path in paths:
                print(f"{fs}: {path} path ...", flush=True)
                results[fs, path] = hunted(rig, space, fs, path, args.sample, args.seed, Path(tmp) / f"{fs}-{path[:5]}")
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"seq 2 sample {args.sample} seed {args.seed}, barrier, {rig.accel}, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"load {load}")
    print(f"{'fs':6} {'path':8} {'kept':5} {'fsck':8} {'workloads/min':>13} {'distinct/min':>12} {'distinct':>8} "
          f"{'wall s':>7} {'CPU s/distinct':>14}")
    for (fs, path), row in results.items():
        kept, fsck = PATHS[path]
        print(f"{fs:6} {path:8} {'yes' if kept else 'no':5} {fsck:8} {per_minute(row, 'workloads'):13.1f} "
              f"{per_minute(row, 'distinct'):12.0f} {row['distinct']:8} {row['seconds']:7.0f} "
              f"{row['cpu'] / max(row['distinct'], 1):14.3f}")
    for fs, path in results:
        if path != "today's":
            today = results[fs, "today's"]["failing"]
            print(f"{fs} verdicts, {path} against today's: {agreement(today, results[fs, path]['failing'])}")
    for fs in args.fs.split(","):
        new, today = (per_minute(results[fs, name], "distinct") for name in ("new", "today's"))
        print(f"{fs}: {new:.0f} distinct states/min (new), {today:.0f} (today's), x{new / today if today else 0:.2f}")


if __name__ == "__main__":
    main()
