"""What the step after recovery adds to a state's check, the shell's way against pp-tree's: in
one hot checker guest, a small fresh image of each filesystem is mounted, its work directory
walked with pp-tree (the hunt's collect), the checker's new names made and fsynced by the shell
function pp-check had until 2026-11-30 (`find`, a `while` loop, `mkdir`, `sync`: a guest process
each) and removed again (not timed), then by `pp-tree -C DIR --after ROOT` (the walk and the
step in one process, as pp-check runs it now; the walk timed alone before is taken off) and
removed again, and the image unmounted, N times in one guest command. Prints per filesystem the medians, from the
guest's clock (10 ms steps), of each step and of the mount, walk and unmount they join. Run by
hand; never asserted. The machine is shared: say what ran beside it.

    .venv/bin/python bench/recovery_step.py [--fs btrfs,ext4,xfs] [--checks 20]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hot_image import hot_image
from plugpull.guest.rig import prepare_rig

MADE = "/mnt/check/pp-new /mnt/check/pp-new-dir /mnt/check/pp/pp-new /mnt/check/pp/*/pp-new"


def clock(name: str) -> str:
    """The guest's clock into shell variable `name`, by builtins only (no process to time)."""
    return f"read {name} pp_x </proc/uptime"


# pp-check's step after recovery until 2026-11-30, a shell function (now pp-tree --after)
SHELL_STEP = r"""mnt=/mnt/check sub=pp out=/tmp/bench-after
create_after() {
    { echo $mnt; find "$mnt/$sub" -xdev -type d 2>/dev/null; } | while read -r d; do
        printf 'made after recovery\n' >"$d/pp-new" && echo "$d/pp-new"
    done >$out.made 2>$out.create
    mkdir $mnt/pp-new-dir 2>>$out.create && echo $mnt/pp-new-dir >>$out.made
    [ -s $out.made ] && sync $(cat $out.made) 2>>$out.create
    if [ -s $out.create ]; then echo create_rc=1; else echo create_rc=0; fi
}
"""


def timed(rig, fs_name: str, checks: int, scratch: Path) -> tuple[float, float, float]:
    """Medians: the shell's step, pp-tree's step, and the mount, walk and unmount."""
    with hot_image(rig, fs_name, scratch) as (fs, _, m, dev):
        m.write_file("/tmp/after.sh", SHELL_STEP)
        mount = f"mount -t {fs.mount_type} /dev/{dev} /mnt/check"
        m.run(f"mkdir -p /mnt/check && {mount} && mkdir -p /mnt/check/pp/A /mnt/check/pp/B && "
              "echo x > /mnt/check/pp/A/foo && umount /mnt/check").check()
        clean = f"rm -rf {MADE}; sync"
        loop = (f". /tmp/after.sh; i=0; while [ $i -lt {checks} ]; do {clock('a')}; {mount} && "
                f"{clock('m')}; (cd /mnt/check/pp && pp-tree) >/dev/null; {clock('b')}; create_after >/dev/null; {clock('c')}; "
                f"{clean}; {clock('d')}; pp-tree -C /mnt/check/pp --after /mnt/check >/dev/null 3>&1; {clock('e')}; "
                f"{clean}; {clock('f')}; umount /mnt/check; {clock('g')}; echo $a $m $b $c $d $e $f $g; i=$((i+1)); done")
        rows = [[float(x) for x in line.split()] for line in m.run(loop, timeout=1200).check().text.splitlines()
                if line.strip()]
    return (statistics.median(r[3] - r[2] for r in rows),
            statistics.median(r[5] - r[4] - (r[2] - r[1]) for r in rows),
            statistics.median(r[2] - r[0] + r[7] - r[6] for r in rows))


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
    print(f"{'fs':6} {'shell step s':>12} {'pp-tree step s':>15} {'mount+walk+umount s':>20}")
    for fs, (shell, tree, rest) in rows.items():
        print(f"{fs:6} {shell:12.3f} {tree:15.3f} {rest:20.3f}")


if __name__ == "__main__":
    main()
