"""What putting a state before a hot checker guest costs its QEMU: plugging it in and out, or
copying it into a disk the guest keeps plugged in (`check.slots`).

    .venv/bin/python bench/plug_cost.py [--fs ext4,xfs,btrfs] [--rounds 4]

One hot checker guest per filesystem, and the hunt's formatted image with a few files in its
work directory. Each round hands the guest 8 states (copies of that image, every other one
with a file more) two ways, and reads the QEMU's CPU seconds (/proc/PID/stat) around them:
  plugged     8 disks plugged in (a throwaway qcow2 overlay each), the hunt's guest command
              (mount, `pp-tree`, unmount each, fsck left to the host), unplugged;
  slots       8 disks plugged in once; each round the host copies the states into them, the
              guest forgets its cached blocks of them (`blockdev --flushbufs`) and runs the same
              command.
The states are clean images: a crash state's log recovery at mount costs both ways the same,
and is not here.
Each check's tree must name the state's files (one more in every other state): a slot the
guest read stale fails the run. Prints QEMU CPU seconds and wall seconds a state. Run by hand
(`make bench-plug-cost`); never asserted in tests. The machine is shared: say what ran beside it.
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from floor import FILL
from hunt_cpu import children

from plugpull.check.hotbatch import lun_of, many_command, split_answer
from plugpull.check.statecheck import state_disk
from plugpull.check.hotguest import HotGuest
from plugpull.check.slots import Slots
from plugpull.guest.contract.config import Bus, DiskSpec
from plugpull.guest.rig import prepare_rig
from plugpull.hunt.record import formatted
from plugpull.hunt.hunter import DISK_MIB
from plugpull.testbed.fs import filesystem, mode as mode_named

STATES = 8


def images(m, fs, scratch: Path) -> tuple[Path, Path]:
    """The formatted image with FILL's files, and a copy with one file more."""
    one = formatted(fs, mode_named("barrier"), DISK_MIB.get(fs.mount_type, 64), scratch / "one.img")
    two = scratch / "two.img"
    for path, extra in ((one, ""), (two, " && echo extra > /mnt/check/pp/B/extra")):
        if extra:
            shutil.copy(one, two)
        disk = m.attach_disk(DiskSpec(path, Bus.SCSI, True, host_flush=False), wait=True)
        fill = FILL if not extra else "true"
        m.run(f"mkdir -p /mnt/check && mount -t {fs.mount_type} /dev/{disk.device} /mnt/check && {fill}{extra} "
              f"&& umount /mnt/check").check()
        m.detach_disks([disk])
    return one, two


def checked(m, fs, luns: list[int], forget: str = "") -> list[int]:
    """The number of lines of each state's tree."""
    answer = m.run(forget + many_command(fs.mount_type, "pp", "tree", luns, fsck=False), timeout=600)
    return [parts["blob"].count(b"\n") for parts in split_answer(answer.stdout, len(luns))]


def one_round(m, fs, way: str, states: list[Path], slots: Slots) -> list[int]:
    if way == "slots":
        return checked(m, fs, slots.fill(states), slots.forget_command(len(states)))
    disks = [m.attach_disk(state_disk(state), wait=False) for state in states]
    lines = checked(m, fs, [lun_of(disk) for disk in disks])
    m.detach_disks(disks)
    return lines


def measured(rig, fs_name: str, rounds: int, scratch: Path) -> dict[str, tuple[float, float]]:
    fs, out = filesystem(fs_name), {}
    guest = HotGuest(rig, set())
    try:
        m = guest.machine
        one, two = images(m, fs, scratch)
        slots = Slots(m, guest.scratch, one.stat().st_size, STATES)
        for way in ("plugged", "slots"):
            seen = []
            qemu, wall = sum(children(set()).values()), time.monotonic()
            for r in range(rounds):
                states = [(one, two)[(r + k) % 2] for k in range(STATES)]
                seen.append(one_round(m, fs, way, states, slots))
            qemu, wall = sum(children(set()).values()) - qemu, time.monotonic() - wall
            if any(lines[k] == lines[k + 1] for lines in seen for k in range(STATES - 1)):
                raise SystemExit(f"{fs_name} {way}: a state's tree was its neighbour's: {seen}")
            out[way] = (qemu / (rounds * STATES), wall / (rounds * STATES))
    finally:
        guest.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fs", default="ext4,xfs,btrfs")
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args()
    rig, rows = prepare_rig(), {}
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-plug-cost-") as tmp:
        for fs in args.fs.split(","):
            rows[fs] = measured(rig, fs, args.rounds, Path(tmp))
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"{STATES} states a round, {args.rounds} rounds, {rig.accel}, {time.strftime('%Y-%m-%d %H:%M')}, load {load}")
    print(f"{'fs':6} {'way':10} {'QEMU CPU s/state':>16} {'wall s/state':>12}")
    for fs, ways in rows.items():
        for way, (qemu, wall) in ways.items():
            print(f"{fs:6} {way:10} {qemu:16.4f} {wall:12.4f}")


if __name__ == "__main__":
    main()
