"""Where one crash state's check time goes on the hot-plug path, step by step.

    .venv/bin/python bench/check_profile.py [--states 12] [--fs xfs]

Records an fsync-files workload on a 512 MiB disk, builds `--states` reorder states, and in
one hot checker guest times each step of each state: on the host building the state, the
throwaway overlay, QMP blockdev-add and device_add, the guest finding the disk; in the guest
the recovery mount, the oracle's tar, the unmount and fsck (from the guest's clock); then
bringing the tar back and unplugging. Prints the median per step. Run by hand; never asserted.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from plugpull.check.statecheck import state_disk
from plugpull.crash.judge import build_state, plan_states
from plugpull.crash.record import Trigger, record
from plugpull.guest.qemu import hotplug
from plugpull.guest.contract.backend import wait_for_disk
from plugpull.guest.contract.config import Accel, MachineSpec
from plugpull.guest.rig import prepare_rig
from plugpull.powerloss.cuts import state_cuts
from plugpull.powerloss.writelog import iter_entries
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.workloads import FsyncFiles

GUEST_STEPS = ("mount", "tar", "umount", "fsck")
TIMED_CHECK = (
    "t() { cut -d' ' -f1 /proc/uptime; }; dev=$1; m=/mnt/check; mkdir -p $m; dmesg -c >/dev/null; "
    "a=$(t); mount -t %s $dev $m 2>/dev/null; b=$(t); tar -cf /tmp/p.tar -C $m pp 2>/dev/null; c=$(t); "
    "umount $m; d=$(t); %s $dev >/dev/null 2>&1; e=$(t); echo $a $b $c $d $e")


QEMU_PID = []  # the profiled guest's QEMU: its CPU time is read beside each step's wall time
CPU = {}  # step -> QEMU CPU seconds per run of it


def qemu_cpu() -> float:
    if not QEMU_PID:
        return 0.0
    fields = Path(f"/proc/{QEMU_PID[0]}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(steps: dict, name: str, started: float) -> float:
    """Adds the step's wall time since `started` and QEMU's CPU time since the last step."""
    now, cpu = time.monotonic(), qemu_cpu()
    steps[name].append(now - started)
    if "last" in CPU:
        CPU.setdefault(name, []).append(cpu - CPU["last"])
    if QEMU_PID:
        CPU["last"] = cpu
    return now


def profile_state(m, state, fs, steps: dict) -> None:
    disk = state_disk(state.images[0])
    lun = m._luns.take()
    node = f"hotdisk{lun}"
    t = time.monotonic()
    overlay = hotplug.create_overlay(disk.path, m.tempdir / f"{node}.qcow2")
    t = timed(steps, "host: qemu-img overlay", t)
    m._qmp("blockdev-add", hotplug.blockdev_options(disk, node, overlay))
    t = timed(steps, "host: QMP blockdev-add", t)
    m._qmp("device_add", hotplug.scsi_device_options(node, lun, disk))
    t = timed(steps, "host: QMP device_add", t)
    dev = wait_for_disk(m, f"plugpull{lun}")
    t = timed(steps, "guest: disk appears", t)
    fsck = "xfs_repair -n" if fs.name == "xfs" else "e2fsck -fn"
    marks = [float(x) for x in m.run(TIMED_CHECK.replace("$1", f"/dev/{dev}") % (fs.name, fsck)).text.split()]
    t = timed(steps, "guest command, total", t)
    for name, a, b in zip(GUEST_STEPS, marks, marks[1:]):
        steps[f"  guest clock: {name}"].append(b - a)
    m.run("cat /tmp/p.tar")
    t = timed(steps, "host: tar back over channel", t)
    m._qmp("device_del", {"id": node})
    m._wait_event("DEVICE_DELETED", "device", node)
    t = timed(steps, "host: device_del + event", t)
    m._qmp("blockdev-del", {"node-name": node})
    m._luns.release(lun)
    overlay.unlink()
    wait_for_disk(m, f"plugpull{lun}", present=False)
    timed(steps, "guest: disk gone", t)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=12)
    ap.add_argument("--fs", default="xfs")
    ap.add_argument("--accel", type=Accel, choices=list(Accel), default=Accel.AUTO)
    args = ap.parse_args()
    rig = prepare_rig(args.accel)
    fs = filesystem(args.fs)
    wl = FsyncFiles(count=60, seed=1)
    steps: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
        tmp = Path(tmp)
        rec = record(tmp / "record", BedSpec(fs, mode("barrier"), wl, 512), Trigger.parse("acks:50"), rig)
        entries = list(iter_entries(rec.log))
        planned = plan_states(rec, [("reorder", c) for c in state_cuts(entries, args.states, 1)], 1, entries)
        states = []
        for i, pieces in enumerate(planned.plans):
            t = time.monotonic()
            states.append(build_state(rec, pieces, tmp / f"state-{i}.img"))
            timed(steps, "host: build state file", t)
        t = time.monotonic()
        with rig.machine(MachineSpec(scsi_controller=True), name="profile") as m:
            QEMU_PID.append(m._proc.pid)
            timed(steps, "boot to ready (once)", t)
            for _ in range(10):
                t = time.monotonic()
                m.run("true")
                timed(steps, "command round trip", t)
            for state in states:
                profile_state(m, state, fs, steps)
    print(f"{args.fs} 512 MiB fsync-files, {rig.accel}, {len(states)} states: median seconds per step, "
          f"wall and QEMU CPU (less sensitive to a loaded host)")
    for name, values in steps.items():
        cpu = f"{statistics.median(CPU[name]):7.3f} CPU" if name in CPU else " " * 11
        print(f"  {name:32} {statistics.median(values):7.3f}  {cpu}  (min {min(values):.3f}, max {max(values):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
