"""The floor of a state check: the least one can cost on this machine. A small image,
formatted once and given a few files, stays plugged into one hot checker guest; the guest
mounts it, reads its work directory with `pp-tree` (the hunt's collect) and unmounts it, N
times in one guest command, so no plugging, no per-state command and no fsck is paid. Beside
it: the same loop with the guest's caches dropped before each mount (a new state's blocks
are read from its disk), the same N as one guest command each, and the host's fsck of the
same image N times (natively, as `hostfsck` runs it, without QEMU's export of it).

    .venv/bin/python bench/floor.py [--fs ext4,xfs,btrfs] [--checks 40] [--hunt ext4=346:0.249,xfs=142]
    .venv/bin/python bench/floor.py --sample 64     # and a seq-2 hunt of 64 per filesystem, in this run

Prints per filesystem the seconds per check of each, and, given a hunt's figures (`plugpull
hunt` prints them: its distinct states per minute, and optionally after a colon the checker's
worker-seconds per state, from its `checker commands` line), the hunt's seconds per distinct
state and the checker's as ratios to the floor. With `--sample K`, the figures are this run's
own: a seq-2 hunt of K sampled workloads (seed 1) per filesystem, right after its floor, with
the host's fsck's share of the checker's commands. The image is unchanged and clean: a crash state also pays its log's recovery,
which the floor does not. Run by hand; never asserted in tests. The machine is shared: say
what ran beside it.
"""

import argparse
import tempfile
import time
from pathlib import Path

from hot_image import hot_image
from plugpull.check import hostfsck
from plugpull.generate.space import Space
from plugpull.guest.rig import prepare_rig
from plugpull.hunt.hunter import HuntSpec, hunt

FILL = ("mkdir -p /mnt/check/pp/A /mnt/check/pp/B && echo foo > /mnt/check/pp/A/foo && "
        "echo bar > /mnt/check/pp/B/bar && ln -s foo /mnt/check/pp/A/link")
ONE = "mount -t {fs} /dev/{dev} /mnt/check && (cd /mnt/check/pp && pp-tree) >/tmp/floor.tree && umount /mnt/check"


def floor(rig, fs_name: str, checks: int, scratch: Path) -> dict:
    """Seconds per check: N in one guest command, N commands, and the host's fsck N times."""
    with hot_image(rig, fs_name, scratch) as (fs, image, m, dev):
        m.run(f"mkdir -p /mnt/check && mount -t {fs.mount_type} /dev/{dev} /mnt/check && {FILL} && umount /mnt/check").check()
        one = ONE.format(fs=fs.mount_type, dev=dev)
        m.run(one).check()  # warm: the first mount reads what later ones find cached
        t0 = time.monotonic()
        m.run(f"i=0; while [ $i -lt {checks} ]; do {one} || exit 1; i=$((i+1)); done", timeout=600).check()
        looped = (time.monotonic() - t0) / checks
        t0 = time.monotonic()
        m.run(f"i=0; while [ $i -lt {checks} ]; do echo 3 >/proc/sys/vm/drop_caches; {one} || exit 1; i=$((i+1)); done",
              timeout=600).check()
        cold = (time.monotonic() - t0) / checks
        t0 = time.monotonic()
        for _ in range(checks):
            m.run(one).check()
        commands = (time.monotonic() - t0) / checks
    t0 = time.monotonic()
    for _ in range(checks):
        hostfsck.run(fs.mount_type, image, 300)
    return {"floor": looped, "cold": cold, "commands": commands, "fsck": (time.monotonic() - t0) / checks}


def hunted(rig, fs: str, sample: int, scratch: Path) -> tuple[float, float, float]:
    """A seq-2 hunt's distinct states per minute, its checker's worker-seconds per state, and
    the host fsck's share of them."""
    run = hunt(HuntSpec(2, fs, sample=sample), Space(2), [rig], scratch / f"hunt-{fs}")
    t = run.timing
    return run.distinct * 60 / run.wall_s, t.many_s / max(t.many_states, 1), t.share


def hunt_figures(text: str) -> dict[str, tuple[float, float | None]]:
    """`ext4=346:0.249,xfs=142`: per filesystem a hunt's distinct states per minute, and the
    checker's worker-seconds per state if given."""
    out = {}
    for part in filter(None, text.split(",")):
        fs, _, figures = part.partition("=")
        rate, _, worker = figures.partition(":")
        out[fs] = (float(rate), float(worker) if worker else None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fs", default="ext4,xfs,btrfs")
    parser.add_argument("--checks", type=int, default=40)
    parser.add_argument("--sample", type=int, help="hunt K seq-2 workloads per filesystem in this run")
    parser.add_argument("--hunt", type=hunt_figures, default={},
                        help="FS=DISTINCT_PER_MIN[:CHECKER_S_PER_STATE],...: a hunt's figures")
    args = parser.parse_args()
    rig = prepare_rig()
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-floor-") as tmp:
        rows, shares = {}, {}
        for fs in args.fs.split(","):
            rows[fs] = floor(rig, fs, args.checks, Path(tmp))
            if args.sample:
                rate, worker, shares[fs] = hunted(rig, fs, args.sample, Path(tmp))
                args.hunt[fs] = (rate, worker)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"floor of a state check, {args.checks} each, {rig.accel}, {time.strftime('%Y-%m-%d %H:%M')}, load {load}")
    print(f"{'fs':6} {'floor s/check':>13} {'cold cache':>10} {'a command each':>14} {'host fsck':>9} "
          f"{'hunt s/state':>12} {'hunt/floor':>10} {'checker/floor':>13}")
    for fs, r in rows.items():
        rate, worker = args.hunt.get(fs, (None, None))
        hunt = f"{60 / rate:12.3f} {60 / rate / r['floor']:9.1f}x" if rate else f"{'-':>12} {'-':>10}"
        hunt += f" {worker / r['floor']:12.1f}x" if worker else f" {'-':>13}"
        print(f"{fs:6} {r['floor']:13.3f} {r['cold']:10.3f} {r['commands']:14.3f} {r['fsck']:9.3f} {hunt}")
    for fs, share in shares.items():
        print(f"{fs}: the host's fsck is {share:.0%} of the checker's commands (seq-2 sample of {args.sample})")


if __name__ == "__main__":
    main()
