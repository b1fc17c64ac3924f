"""One fault run: the filesystem on a dm-flakey device over the (recorded) disk, the workload
started, the fault switched on at its trigger and off after its window, then the verdict by
a clean unmount, a remount and fsck in the same guest."""

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.check.checker import Checker
from plugpull.check.console import ConsoleWatch
from plugpull.check.verdict import Verdict
from plugpull.crash.record import START_WORKLOAD, TROUBLE_ON_THE_CONSOLE, Trigger
from plugpull.errors import GuestTimeout, InfraError
from plugpull.faults.evidence import Corruption, corruption
from plugpull.faults.powercut import PowerCuts, judge_power_cuts
from plugpull.faults.faultspec import SEEDED, FaultSpec
from plugpull.faults.table import DEVICE, fault_table, linear, swap
from plugpull.faults.told import Told
from plugpull.faults.verdict import FaultVerdict, gave_up, judge
from plugpull.guest.contract.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import create_disk
from plugpull.guest.rig import Rig
from plugpull.powerloss.writelog import entry_index_at
from plugpull.results.faults import FaultResult, fault_key
from plugpull.sparse import copy_sparse
from plugpull.testbed.bed import MOUNTPOINT, format_disks
from plugpull.testbed.fs import MODES, Filesystem
from plugpull.testbed.workloads.faulty import FAULT_OFF, FAULT_ON


@dataclass(frozen=True)
class FaultCase:
    fs: Filesystem
    fault: FaultSpec
    workload: object
    disk_mib: int = 512  # mkfs.xfs wants more than 300 MB
    bus: Bus = Bus.AHCI
    power_cuts: PowerCuts | None = None  # then judge power cuts in the run's write log too


@dataclass
class FaultRun:
    case: FaultCase
    verdict: FaultVerdict | None = None
    told: Told = field(default_factory=Told)
    table: str = ""  # `dmsetup table` while the fault was on: the proof it was loaded
    status: str = ""  # `dmsetup status` then
    switched: list = field(default_factory=list)  # (seconds since start, "on" / "off")
    shutdown: str = ""
    version_after: int | None = None  # fsync-retry: the version of its file after the remount
    corruption: Corruption = field(default_factory=Corruption)
    entries_at_on: int = 0  # the write log's entries when the fault took effect
    entries_at_end: int = 0  # and when the workload ended
    power_loss: dict = field(default_factory=dict)  # model -> verdict -> cuts (case.power_cuts)
    seconds: float = 0.0

    def to_json(self) -> dict:
        c = self.case
        return {"fs": c.fs.name, "fault": str(c.fault), "workload": c.workload.name,
                "params": c.workload.params(), "verdict": str(self.verdict.verdict), "reason": self.verdict.reason,
                "told": self.told.to_json(), "table": self.table, "status": self.status,
                "switched": self.switched, "shutdown": self.shutdown,
                "version_after": self.version_after, "corruption": self.corruption.finding,
                "corruption_evidence": self.corruption.evidence, "power_loss": self.power_loss,
                "seconds": round(self.seconds, 1)}

    def to_result(self, number: int = 0, kernel: str | None = None, started: str | None = None) -> FaultResult:
        """The run as it is saved: `number`, which run of its cell it is."""
        c = self.case
        doc = self.to_json()
        return FaultResult.from_json({**doc, "key": fault_key(c.fs.name, str(c.fault), c.workload.name,
                                                              doc["params"], number),
                                      "spec": c.fault.to_json(), "run": number, "kernel": kernel,
                                      "started": started})


def run_fault(directory: Path, case: FaultCase, rig: Rig, timeout: float = 300.0) -> FaultRun:
    directory.mkdir(parents=True, exist_ok=True)
    disk, write_log = create_disk(directory / "disk.img", case.disk_mib), directory / "write.log"
    base = directory / "base.img"  # the power cuts' base image
    try:
        format_disks(case.fs, MODES["barrier"], disk, None)
        if case.power_cuts:
            copy_sparse(disk, base)
        write_log.write_bytes(b"")
        spec = MachineSpec(disks=(DiskSpec(disk, case.bus, True, host_flush=False, write_log=write_log),),
                           memory_mib=case.workload.memory_mib())
        with rig.machine(spec, console_log=directory / "console.log", name="faults") as m:
            run = _in_guest(m, case, rig, write_log, timeout)
        if case.power_cuts and run.verdict.verdict != Verdict.KERNEL_CRASH:
            run.power_loss = judge_power_cuts(directory, run, rig, case.power_cuts)
        return run
    finally:
        for path in (disk, write_log, base):
            path.unlink(missing_ok=True)


def _in_guest(m, case: FaultCase, rig: Rig, write_log: Path, timeout: float) -> FaultRun:
    run = FaultRun(case)
    dev, switch, console = start(m, run, write_log, timeout)
    trouble = until_done(m, case.fault, run, switch, write_log, timeout, console) or console.trouble()
    run.entries_at_on = switch.entries_at_on
    run.entries_at_end = entry_index_at(write_log, os.stat(write_log).st_size)
    if trouble:
        run.verdict = FaultVerdict(Verdict.KERNEL_CRASH, trouble.summary)
    else:
        switch.off()
        run.verdict = _after_window(m, case, rig, run, dev)
    run.seconds = time.monotonic() - switch.started
    return run


def start(m, run: FaultRun, write_log: Path, timeout: float) -> tuple[str, "Switch", ConsoleWatch]:
    """The filesystem mounted on a linear dm device over the disk, the workload started in the
    background (the fault on first if it has no trigger): the device's name, the switch and
    the console watch."""
    case = run.case
    disk = "/dev/" + m.run("readlink /dev/pp-disk0").check().text.strip()
    sectors = int(m.run(f"blockdev --getsz {disk}").check().text)
    m.run(f"modprobe dm_flakey && dmsetup create {DEVICE} --table '{linear(sectors, disk)}'").check()
    dev = m.run(f"dmsetup info -c --noheadings -o blkdevname {DEVICE}").check().text.strip()
    options = f"-o {','.join(case.fs.mount_options)} " if case.fs.mount_options else ""
    m.run(f"mkdir -p {MOUNTPOINT} && mount -t {case.fs.mount_type} {options}/dev/{dev} {MOUNTPOINT} "
          f"&& mkdir -p {MOUNTPOINT}/pp && sync && rm -f {FAULT_ON} {FAULT_OFF}").check()
    if setup := case.workload.setup(MOUNTPOINT):
        m.run(setup, timeout=timeout).check()
    m.acks.set_stamp(lambda: os.stat(write_log).st_size)
    console = ConsoleWatch(m.console_log)
    m.run(TROUBLE_ON_THE_CONSOLE)
    m.write_file("/tmp/workload.sh", case.workload.script(MOUNTPOINT))
    console.set_mark()
    switch = Switch(m, run, sectors, disk, write_log)
    if case.fault.trigger is None:
        switch.on()
    m.run(START_WORKLOAD).check()
    return dev, switch, console


class Switch:
    """Turns the fault on and off (once each), noting when, the table that took effect, and
    when the swap to the fault began (`swap_started`) and the write log's entries once it had
    taken effect (`entries_at_on`)."""

    def __init__(self, m, run: FaultRun, sectors: int, disk: str, write_log: Path):
        self.m, self.run, self.sectors, self.disk, self.write_log = m, run, sectors, disk, write_log
        self.started, self.on_at, self.off_at = time.monotonic(), None, None
        self.swap_started, self.entries_at_on = None, 0

    def on(self) -> None:
        self.swap_started = time.monotonic()
        self.m.run(swap(fault_table(self.run.case.fault, self.sectors, self.disk))).check()
        self.on_at = time.monotonic()
        self.entries_at_on = entry_index_at(self.write_log, os.stat(self.write_log).st_size)
        self.run.table = self.m.run(f"dmsetup table {DEVICE}").check().text.strip()
        self.run.status = self.m.run(f"dmsetup status {DEVICE}").check().text.strip()
        self.m.run(f"touch {FAULT_ON}").check()
        self.run.switched.append((round(self.on_at - self.started, 1), "on"))

    def off(self) -> None:
        if self.on_at is None or self.off_at is not None:
            return
        self.m.run(swap(linear(self.sectors, self.disk))).check()
        self.off_at = time.monotonic()
        self.m.run(f"touch {FAULT_OFF}").check()
        self.run.switched.append((round(self.off_at - self.started, 1), "off"))

    def window_over(self, window: float | None) -> bool:
        return self.on_at is not None and window is not None and time.monotonic() - self.on_at >= window


def until_done(m, fault: FaultSpec, run: FaultRun, switch: Switch, write_log: Path, timeout: float, console):
    """Read the ack port until the workload ends, switching the fault as its trigger and
    window say; a KernelTrouble if the guest kernel failed meanwhile."""
    deadline = switch.started + timeout
    while run.told.exit_code is None:
        if switch.on_at is None and _triggered(fault.trigger, run.told, write_log, switch.started):
            switch.on()
        if switch.window_over(fault.window):
            switch.off()
        try:
            line = m.acks.get(timeout=0.5)
        except GuestTimeout:
            if trouble := console.trouble():
                return trouble
            if time.monotonic() > deadline:
                raise GuestTimeout(f"the workload did not finish in {timeout:.0f} s") from None
            continue
        if line is None:
            if trouble := console.trouble():
                return trouble
            raise InfraError("the ack stream closed before the workload ended (QEMU died?)")
        run.told.add(line.text, line.arrived, line.stamp)
    return None


def _triggered(trigger: Trigger, told: Told, write_log: Path, started: float) -> bool:
    if trigger.kind == "acks":
        return len(told.acks) >= trigger.value
    if trigger.kind == "time":
        return time.monotonic() - started >= trigger.value
    return entry_index_at(write_log, os.stat(write_log).st_size) >= trigger.value


def _after_window(m, case: FaultCase, rig: Rig, run: FaultRun, dev: str) -> FaultVerdict:
    options = m.run(f"awk '$2 == \"{MOUNTPOINT}\" {{print $4}}' /proc/mounts").text.strip()
    scrub = m.run(f"btrfs scrub start -B -R {MOUNTPOINT} 2>&1", timeout=120).text if case.fs.mount_type == "btrfs" else ""
    kernel_log = m.run("dmesg").text
    run.shutdown = gave_up(kernel_log, options)
    umount_rc = m.run(f"umount {MOUNTPOINT}").rc
    collect = "sums" if case.workload.collect == "sums" else "tar"
    obs = Checker(rig, case.fs).check_one(m, dev, collect)
    wrong_after = False
    if hasattr(case.workload, "version_of"):
        run.version_after = case.workload.version_of(obs.files or {})
        wrong_after = obs.collect_rc == "0" and run.version_after is None and case.workload.path in (obs.files or {})
    if case.fault.kind in SEEDED:  # other faults' stale reads are the verdict's silent-loss
        run.corruption = corruption(run.told, kernel_log + "\n" + obs.kernel_log, scrub,
                                    unreadable_after=obs.collect_rc not in (None, "0", "absent", "skipped"),
                                    wrong_after=wrong_after)
    return judge(case.fs, obs, run.told, case.workload, run.shutdown, umount_rc)
