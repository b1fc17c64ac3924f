"""Today's hunt path and the new one, side by side in one run, per filesystem: the same seq-2
sample hunted with the host's fsck on every distinct state (`--fsck always`, the default) and
only on the states the mount or the oracle judged not clean (`--fsck failing`).

    .venv/bin/python bench/hunt_paths.py [--fs ext4,xfs,btrfs] [--sample 200] [--seed 1]

Prints per filesystem and path the workloads and distinct states per minute, then whether the
two paths failed the same workloads under the same rules (a state that only fsck would call
damaged is what `failing` can miss: docs/hunt.md), and ends with one line per filesystem that
a script can read:

    FS: N distinct states/min (new), M (today's), xR

The two paths of a filesystem run one after the other, in that order, each from a fresh out
dir. Run by hand (`make bench-hunt`); never asserted in tests. The machine is shared: say what
ran beside it.
"""

import argparse
import tempfile
import time
from pathlib import Path

from plugpull.check.fsckchoice import fsck_choice
from plugpull.generate.space import Space
from plugpull.guest.rig import prepare_rig
from plugpull.hunt.run import HuntSpec, hunt

PATHS = (("today's", "always"), ("new", "failing"))


def hunted(rig, space, fs: str, fsck: str, sample: int, seed: int, out: Path) -> dict:
    spec = HuntSpec(2, fs, sample=sample, seed=seed, fsck=fsck_choice(fsck))
    run = hunt(spec, space, [rig], out)
    failing = {line["id"]: tuple(sorted(line["rules"])) for line in run.lines if line["failing"]}
    return {"workloads": run.new, "distinct": run.distinct, "seconds": run.wall_s, "failing": failing}


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
    args = p.parse_args()
    rig = prepare_rig()
    space = Space(2)
    results = {}
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-hunt-paths-") as tmp:
        for fs in args.fs.split(","):
            for name, fsck in PATHS:
                print(f"{fs}: {name} path (--fsck {fsck}) ...", flush=True)
                results[fs, name] = hunted(rig, space, fs, fsck, args.sample, args.seed, Path(tmp) / f"{fs}-{fsck}")
    print(f"seq 2 sample {args.sample} seed {args.seed}, barrier, {rig.accel}, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{'fs':6} {'path':8} {'fsck':8} {'workloads/min':>13} {'distinct/min':>12} {'distinct':>8} {'wall s':>7}")
    for (fs, name), row in results.items():
        fsck = dict(PATHS)[name]
        print(f"{fs:6} {name:8} {fsck:8} {per_minute(row, 'workloads'):13.1f} {per_minute(row, 'distinct'):12.0f} "
              f"{row['distinct']:8} {row['seconds']:7.0f}")
    for fs in args.fs.split(","):
        print(f"{fs} verdicts: {agreement(results[fs, PATHS[0][0]]['failing'], results[fs, PATHS[1][0]]['failing'])}")
    for fs in args.fs.split(","):
        new, today = (per_minute(results[fs, name], "distinct") for name in ("new", "today's"))
        print(f"{fs}: {new:.0f} distinct states/min (new), {today:.0f} (today's), x{new / today if today else 0:.2f}")


if __name__ == "__main__":
    main()
