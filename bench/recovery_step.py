"""What the step after recovery adds to a state's check: in one hot checker guest, a small
fresh image of each filesystem is mounted, its work directory walked with pp-tree (the hunt's
collect), the checker's new names made and fsynced (`create_after`, from images/check.sh), the
names removed again (not timed) and the image unmounted, N times in one guest command. Prints
per filesystem the medians, from the guest's clock (10 ms steps), of the step and of the mount,
walk and unmount it joins. Run by hand; never asserted. The machine is shared: say what ran
beside it.

    .venv/bin/python bench/recovery_step.py [--fs btrfs,ext4,xfs] [--checks 20]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hot_image import hot_image
from plugpull.guest.rig import prepare_rig
from plugpull.paths import ROOT

CLOCK = "$(cut -d' ' -f1 /proc/uptime)"
MADE = "/mnt/check/pp-new /mnt/check/pp-new-dir /mnt/check/pp/pp-new /mnt/check/pp/*/pp-new"


def create_after() -> str:
    """pp-check's function, as the guest's image holds it."""
    body = (ROOT / "images" / "check.sh").read_text().split("\ncreate_after() {", 1)[1].split("\n}\n", 1)[0]
    return f"mnt=/mnt/check sub=pp out=/tmp/bench-after\ncreate_after() {{{body}\n}}\n"


def timed(rig, fs_name: str, checks: int, scratch: Path) -> tuple[float, float]:
    with hot_image(rig, fs_name, scratch) as (fs, _, m, dev):
        m.write_file("/tmp/after.sh", create_after())
        mount = f"mount -t {fs.mount_type} /dev/{dev} /mnt/check"
        m.run(f"mkdir -p /mnt/check && {mount} && mkdir -p /mnt/check/pp/A /mnt/check/pp/B && "
              "echo x > /mnt/check/pp/A/foo && umount /mnt/check").check()
        loop = (f". /tmp/after.sh; i=0; while [ $i -lt {checks} ]; do a={CLOCK}; {mount} && "
                f"(cd /mnt/check/pp && pp-tree) >/dev/null; b={CLOCK}; create_after >/dev/null; c={CLOCK}; "
                f"rm -rf {MADE}; sync; d={CLOCK}; umount /mnt/check; e={CLOCK}; echo $a $b $c $d $e; i=$((i+1)); done")
        rows = [[float(x) for x in line.split()] for line in m.run(loop, timeout=1200).check().text.splitlines()
                if line.strip()]
    return (statistics.median(r[2] - r[1] for r in rows),
            statistics.median(r[1] - r[0] + r[4] - r[3] for r in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fs", default="btrfs,ext4,xfs")
    parser.add_argument("--checks", type=int, default=20)
    args = parser.parse_args()
    rig = prepare_rig()
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-recovery-") as tmp:
        rows = {fs: timed(rig, fs, args.checks, Path(tmp)) for fs in args.fs.split(",")}
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"the step after recovery, {args.checks} each, {rig.accel}, {time.strftime('%Y-%m-%d %H:%M')}, load {load}")
    print(f"{'fs':6} {'step s':>7} {'mount+walk+umount s':>20}")
    for fs, (step, rest) in rows.items():
        print(f"{fs:6} {step:7.3f} {rest:20.3f}")


if __name__ == "__main__":
    main()
