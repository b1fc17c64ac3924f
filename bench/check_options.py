"""What the checker guest's fsck costs with each set of options, and whether its answer
changes: the same crash states, recovered by a mount as pp-check does, then checked by each
fsck variant in turn, in one guest.

    .venv/bin/python bench/check_options.py [--states 8] [--fs xfs] [--repeat 3]

Records an fsync-files workload on a 512 MiB disk, builds `--states` reorder states and two
damaged ones (the first AG's free-space and inode headers overwritten), cold-plugs them all
into one checker guest, and per state: times the recovery mount and unmount, then each fsck
variant `--repeat` times on the guest's clock, and compares its exit code and output with the
first variant's. Prints the median seconds per variant and every disagreement. Run by hand;
never asserted.
"""

import argparse
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from plugpull.check.statecheck import state_disk
from plugpull.crash.judge import build_state, plan_states
from plugpull.crash.record import Trigger, record
from plugpull.guest.contract.config import Accel, MachineSpec
from plugpull.guest.rig import prepare_rig
from plugpull.powerloss.cuts import state_cuts
from plugpull.powerloss.writelog import iter_entries
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.workloads import FsyncFiles

VARIANTS = {
    "xfs": ["xfs_repair -n", "xfs_repair -n -P", "xfs_repair -n -o bhash=512",
            "xfs_repair -n -P -o bhash=512", "xfs_repair -n -m 64"],
    "ext4": ["e2fsck -fn", "e2fsck -fn -E journal_only"],
}
CLOCK = "t() { cut -d' ' -f1 /proc/uptime; }; "


def damaged(path: Path, out: Path, offset: int) -> Path:
    """A copy of a state image with 512 bytes of garbage at `offset`."""
    out.write_bytes(path.read_bytes())
    with out.open("r+b") as f:
        f.seek(offset)
        f.write(bytes(range(256)) * 2)
    return out


def qemu_cpu(m) -> float:
    """CPU seconds the guest's QEMU process has used: less sensitive to a loaded host than
    the guest's clock."""
    fields = Path(f"/proc/{m._proc.pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def seconds(m, command: str, repeat: int) -> tuple[float, float]:
    """Guest-clock and QEMU-CPU seconds per run of `command`."""
    timed = f"{CLOCK}a=$(t); for i in $(seq {repeat}); do {command} >/dev/null 2>&1; done; b=$(t); echo $a $b"
    cpu = qemu_cpu(m)
    a, b = (float(x) for x in m.run(timed, timeout=600).text.split())
    return (b - a) / repeat, (qemu_cpu(m) - cpu) / repeat


def profile(m, dev: str, fs, repeat: int, times: dict, differ: list) -> None:
    mount = f"mount -t {fs.mount_type} /dev/{dev} /mnt/check && umount /mnt/check"
    times["recovery mount + umount (once)"].append(seconds(m, f"mkdir -p /mnt/check; {mount}", 1))
    first = None
    for variant in VARIANTS[fs.name]:
        times[variant].append(seconds(m, f"{variant} /dev/{dev}", repeat))
        result = m.run(f"{variant} /dev/{dev}", timeout=600)
        answer = (result.rc, result.text.replace(f"/dev/{dev}", "DEV"))
        first = first or answer
        if answer != first:
            differ.append(f"{dev}: {variant!r} rc {answer[0]} against rc {first[0]}")
    times["fsck exit codes"].append(first[0])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fs", default="xfs", choices=sorted(VARIANTS))
    ap.add_argument("--accel", type=Accel, choices=list(Accel), default=Accel.AUTO)
    args = ap.parse_args()
    rig = prepare_rig(args.accel)
    fs = filesystem(args.fs)
    wl = FsyncFiles(count=60, seed=1)
    times: dict[str, list] = defaultdict(list)
    differ: list[str] = []
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
        tmp = Path(tmp)
        rec = record(tmp / "record", BedSpec(fs, mode("barrier"), wl, 512), Trigger.parse("acks:50"), rig)
        entries = list(iter_entries(rec.log))
        planned = plan_states(rec, [("reorder", c) for c in state_cuts(entries, args.states, 1)], 1, entries)
        images = [build_state(rec, pieces, tmp / f"state-{i}.img").images[0]
                  for i, pieces in enumerate(planned.plans)]
        images += [damaged(images[-1], tmp / f"damaged-{o}.img", o) for o in (512, 1024)]
        spec = MachineSpec(disks=tuple(state_disk(p) for p in images))
        with rig.machine(spec, name="check-options") as m:
            times["one busybox process (cat)"].append(seconds(m, "cat /dev/null", 50))
            for lun in range(len(images)):
                dev = m.run(f"readlink /dev/pp-disk{lun}").text.strip()
                profile(m, dev, fs, args.repeat, times, differ)
    print(f"{args.fs} 512 MiB fsync-files, {rig.accel}, {len(images)} states (2 damaged): "
          f"median seconds per run")
    for name, values in times.items():
        shown = values if name == "fsck exit codes" else (
            f"{statistics.median(v[0] for v in values):.3f} guest clock, "
            f"{statistics.median(v[1] for v in values):.3f} QEMU CPU")
        print(f"  {name:34} {shown}")
    print("verdict changes:" if differ else "every variant agrees with the first on exit code and output")
    for line in differ:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
