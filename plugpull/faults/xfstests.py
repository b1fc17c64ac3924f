"""xfstests' power-failure method as a cross-check of the `prefix` model.

xfstests simulates a power cut with dm-flakey: from some point on, writes are dropped
(`drop_writes`, the table swapped with `dmsetup suspend --nolockfs`); the filesystem is
unmounted (its last writes dropped too), writes are allowed again and it is mounted. The
disk then holds exactly the writes that reached it before the swap, which are the entries of
the recorded write log up to that point: the `prefix` model's crash state at that cut. Both
are judged, the first in the recording guest, the second in a checker guest; they agree when
the same files hold the same bytes (so the same acknowledged files are intact)."""

from dataclasses import dataclass, field
from pathlib import Path

from plugpull.check.checker import Checker
from plugpull.check.verdict import Observation
from plugpull.faults.inject import FaultCase, FaultRun, start, until_done
from plugpull.faults.faultspec import parse_fault
from plugpull.guest.contract.config import DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import create_disk
from plugpull.guest.rig import Rig
from plugpull.powerloss.crashstate import CrashState, materialize
from plugpull.powerloss.models import plan
from plugpull.powerloss.writelog import entry_index_at, iter_entries
from plugpull.sparse import copy_sparse
from plugpull.testbed.bed import MOUNTPOINT, format_disks
from plugpull.testbed.fs import MODES, Filesystem


@dataclass
class Side:
    """One way to the state after the cut: mount and fsck as seen, the files, the owed acks lost."""

    mount_rc: int = -1
    fsck_rc: int = -1
    files: dict = field(default_factory=dict)
    lost: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"mount_rc": self.mount_rc, "fsck_rc": self.fsck_rc, "files": len(self.files), "lost": self.lost}


@dataclass
class CrossCheck:
    fs: str
    workload: str
    trigger: str
    cut: int = 0  # write-log entries when writes began to be dropped
    logged_after: int = 0  # entries that reached the log after that (0: the drop was total)
    acks_before: list[int] = field(default_factory=list)  # acks that arrived before the cut: owed
    acks_after: int = 0  # acks that arrived later (their writes may have been dropped)
    flakey: Side = field(default_factory=Side)
    prefix: Side = field(default_factory=Side)
    kernel_crash: str = ""  # the guest kernel failed during the recording: nothing compared

    @property
    def differences(self) -> list[str]:
        """Where the two sides disagree, each in a line; none when they agree."""
        a, b = self.flakey, self.prefix
        out = [f"{what}: dm-flakey {x}, prefix {y}" for what, x, y in
               (("mount rc", a.mount_rc, b.mount_rc), ("fsck rc", a.fsck_rc, b.fsck_rc),
                ("acks lost", a.lost, b.lost)) if x != y]
        paths = sorted(p for p in set(a.files) | set(b.files) if a.files.get(p) != b.files.get(p))
        if paths:
            out.append(f"{len(paths)} files differ, first {paths[0]}")
        if self.logged_after:
            out.append(f"{self.logged_after} write-log entries after the drop began")
        return out

    def to_json(self) -> dict:
        return {"fs": self.fs, "workload": self.workload, "trigger": self.trigger, "cut": self.cut,
                "logged_after": self.logged_after, "acks_before": self.acks_before, "acks_after": self.acks_after,
                "flakey": self.flakey.to_json(), "prefix": self.prefix.to_json(), "differences": self.differences,
                "kernel_crash": self.kernel_crash}


def cross_check(directory: Path, fs: Filesystem, workload, trigger: str, rig: Rig,
                timeout: float = 300.0) -> CrossCheck:
    """Record `workload` on `fs` with writes dropped from `trigger` on; judge the disk the
    xfstests way and the prefix state at the same cut; both results. Leaves no image behind."""
    directory.mkdir(parents=True, exist_ok=True)
    case = FaultCase(fs, parse_fault(f"drop-writes@{trigger}"), workload)
    disk, base, state = (directory / n for n in ("disk.img", "base.img", "state.img"))
    write_log = directory / "write.log"
    result = CrossCheck(fs.name, workload.name, trigger)
    try:
        create_disk(disk, case.disk_mib)
        format_disks(fs, MODES["barrier"], disk, None)
        copy_sparse(disk, base)
        write_log.write_bytes(b"")
        spec = MachineSpec(disks=(DiskSpec(disk, case.bus, True, host_flush=False, write_log=write_log),),
                           memory_mib=workload.memory_mib())
        with rig.machine(spec, console_log=directory / "console.log", name="xfstests") as m:
            result.flakey = _xfstests_way(m, case, rig, write_log, result, timeout)
        if result.kernel_crash:
            return result
        entries = list(iter_entries(write_log))[:result.cut]
        materialize(base, write_log, plan(entries, len(entries), "prefix", 1), state, digest=False)
        obs = Checker(rig, fs).check([CrashState.of(state)], collect=[_collect(workload)])[0]
        result.prefix = _side(obs, workload, result.acks_before)
        return result
    finally:
        for path in (disk, base, state, write_log):
            path.unlink(missing_ok=True)


def _xfstests_way(m, case: FaultCase, rig: Rig, write_log: Path, result: CrossCheck, timeout: float) -> Side:
    run = FaultRun(case)
    dev, switch, console = start(m, run, write_log, timeout)
    if trouble := until_done(m, case.fault, run, switch, write_log, timeout, console) or console.trouble():
        result.kernel_crash = trouble.summary
        return Side()
    result.cut, result.acks_before = switch.entries_at_on, run.told.acks_before(switch.swap_started)
    result.acks_after = len(set(run.told.acks) - set(result.acks_before))
    m.run(f"umount {MOUNTPOINT}").check()
    switch.off()
    result.logged_after = entry_index_at(write_log, write_log.stat().st_size) - switch.entries_at_on
    obs = Checker(rig, case.fs).check_one(m, dev, _collect(case.workload))
    return _side(obs, case.workload, result.acks_before)


def _collect(workload) -> str:
    return "sums" if workload.collect == "sums" else "tar"


def _side(obs: Observation, workload, owed: list[int]) -> Side:
    files = obs.files or {}
    lost = [l.ack for l in workload.examine(owed, files).lost] if obs.mount_rc == 0 else list(owed)
    return Side(obs.mount_rc, obs.fsck_rc, files, lost)
