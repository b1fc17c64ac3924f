"""Record a workload: base image + write log + stamped acks, ended by a power cut.

The disk is formatted on the host (the same Debian xfsprogs/e2fsprogs the guest has) and a
sparse copy kept as the base; QEMU's blklogwrites driver then logs every write and flush the
guest makes while it writes through to the disk. A trigger decides when the plug is pulled.

What every recording shares is here too: the `Record`, the `Trigger`, the workload started
in the guest (`START_WORKLOAD`), acks read until the trigger (`acks_until`) and stamped with
their log positions (`stamped_acks`), and the record's `recording_meta`. A hunt's recorder
(`hunt.record`, many workloads in one guest) and a fault run build on them.
"""

import bisect
import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from plugpull.check.console import ConsoleWatch
from plugpull.check.verdict import Ack
from plugpull.errors import DiskFull, GuestTimeout, InfraError, UsageError
from plugpull.files import SAVED_JSON_MAX, atomic_write_json, read_regular_text
from plugpull.guest.rig import Rig
from plugpull.powerloss.writelog import entry_index_at, iter_entries, summarize
from plugpull.testbed.bed import MOUNTPOINT, BedSpec, disk_count, nth, testbed
from plugpull.values import EVENTS_MAX, decimal, shown, whole

log = logging.getLogger(__name__)

# Warnings reach the console too (an fs WARNING the guest survives), and a task blocked in
# the kernel is reported after 60 s rather than 120, well within the workload's timeout.
TROUBLE_ON_THE_CONSOLE = ("echo 5 > /proc/sys/kernel/printk; "
                          "echo 60 > /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null")

TIME_MAX = 86400  # seconds: a day
# The workload's script started in the background, its exit status sent on the ack stream as
# `done N`; the same in every recording guest (a crash run's, a hunt's, a fault run's).
START_WORKLOAD = ("(sh /tmp/workload.sh > /tmp/workload.out 2>&1; echo \"done $?\" > /dev/plugpull-ack) "
                  "</dev/null >/dev/null 2>&1 &")


@dataclass(frozen=True)
class Trigger:
    """When to pull the plug: after N acks, after N log entries, after S seconds, or at the
    workload's end (the live kill point is then the end of the log)."""

    kind: str
    value: float = 0

    @classmethod
    def parse(cls, text: str) -> "Trigger":
        kind, _, value = text.partition(":")
        if kind == "end" and not value:
            return cls("end")
        if kind in ("acks", "writes"):
            try:
                return cls(kind, whole(value, 1, EVENTS_MAX))
            except ValueError:
                pass
        if kind == "time":
            try:
                number = decimal(value)
            except ValueError:
                number = -1
            if 0 < number <= TIME_MAX:
                return cls(kind, number)
        raise UsageError(f"bad trigger {shown(text)}: use acks:N (N from 1 to {EVENTS_MAX}), writes:N, "
                         f"time:SECONDS (at most {TIME_MAX}) or end")

    def __str__(self) -> str:
        return self.kind if self.kind == "end" else f"{self.kind}:{self.value:g}"


@dataclass
class Record:
    dir: Path
    meta: dict
    acks: list

    @property
    def base(self) -> Path:
        return self.dir / "base.img"

    @property
    def log(self) -> Path:
        return self.dir / "write.log"

    @property
    def disks(self) -> int:
        """How many disks were recorded: base.img and write.log, then base2.img and write2.log..."""
        return self.meta.get("disks", 2 if "log2" in self.meta else 1)

    @property
    def bases(self) -> list[Path]:
        return [nth(self.base, i) for i in range(self.disks)]

    @property
    def logs(self) -> list[Path]:
        return [nth(self.log, i) for i in range(self.disks)]

    @property
    def consistent_cuts(self) -> list[tuple[int, ...]]:
        """The cuts across every disk's log that the sampler saw (more than one disk only)."""
        return [tuple(c) for c in self.meta.get("cuts", self.meta.get("cut_pairs", []))]

    def save(self) -> None:
        atomic_write_json(self.dir / "record.json", {**self.meta, "acks": [asdict(a) for a in self.acks]})

    @classmethod
    def load(cls, directory: Path) -> "Record":
        data = json.loads(read_regular_text(directory / "record.json", most=SAVED_JSON_MAX))
        acks = [Ack(**a) for a in data.pop("acks")]  # a record from before N disks has position2
        return cls(directory, data, acks)


def record(directory: Path, bed: BedSpec, trigger: Trigger, rig: Rig, timeout: float = 600.0,
           progress=None) -> Record:
    """A kernel crash or hang of the guest while the workload runs (not the planned cut) is a
    finding, not a failure: the record then ends there, with meta["kernel_crash"]."""
    fs, mode, workload = bed.fs, bed.mode, bed.workload
    directory.mkdir(parents=True, exist_ok=True)
    write_log = directory / "write.log"
    logs = [nth(write_log, i) for i in range(disk_count(bed))]
    meta = {**recording_meta(fs, mode, workload, trigger, bed.disk_mib, bed.bus, rig.image),
            **({"stack": str(bed.stack)} if bed.stack else {})}
    with testbed(directory, bed, rig, write_log=write_log, base_copy=directory / "base.img",
                 timeout=timeout) as running:
        m = running.machine
        meta["accel"] = str(m.accel)
        meta["queue_write_cache"] = running.queue_write_cache
        sizes = ((lambda: tuple(os.stat(path).st_size for path in logs)) if len(logs) > 1
                 else (lambda: os.stat(write_log).st_size))
        m.acks.set_stamp(sizes)
        sampler = Sampler(sizes) if len(logs) > 1 else None
        console = ConsoleWatch(m.console_log)
        m.run(TROUBLE_ON_THE_CONSOLE)
        m.write_file("/tmp/workload.sh", workload.script(MOUNTPOINT))
        console.set_mark()
        started = time.monotonic()
        m.run(START_WORKLOAD).check()
        acks, finished, trouble = acks_until(m, trigger, write_log, started, timeout, progress, console)
        trouble = trouble or console.trouble()
        detail = m.run("tail -n 20 /tmp/workload.out").text if finished not in (None, 0) and not trouble else ""
        log.debug("pulling the plug after %d acks (trigger %s; the workload %s)", len(acks), trigger,
                  "was still running" if finished is None else f"had exited with {finished}")
        m.power_cut()
        meta["workload_seconds"] = time.monotonic() - started
        if sampler:
            sampler.stop()
    if trouble:
        log.warning("the guest kernel failed while the workload ran: %s", trouble.summary)
        meta["kernel_crash"] = asdict(trouble)
    elif finished not in (None, 0) and workload.user_supplied:
        last = detail.strip().splitlines()[-1:] or ["no output"]
        raise UsageError(f"the workload script exited {finished} in the guest: {last[0][:200]}")
    elif finished not in (None, 0):
        raise InfraError(f"the workload failed in the guest (exit {finished}):\n{detail}")
    meta["workload_finished"] = finished == 0
    rec = Record(directory, meta, stamped_acks(meta, acks, logs, sampler, sizes))
    rec.save()
    return rec


def recording_meta(fs, mode, workload, trigger, disk_mib: int, bus, image) -> dict:
    """What a record's record.json says of how it was made, a crash run's and a hunt's alike."""
    return {"fs": fs.name, "mode": mode.name, "workload": workload.name, "params": workload.params(),
            "trigger": str(trigger), "disk_mib": disk_mib, "bus": str(bus), "image": image.key,
            "kernel": image.kernel_release, "packages": image.manifest.get("packages", {})}


def acks_until(m, trigger: Trigger, write_log: Path, started: float, timeout: float, progress, console):
    """Read acks until the trigger fires, the workload ends or the guest kernel fails:
    ([(ack, stamp, kind)], exit code or None, KernelTrouble or None)."""
    acks: list[tuple] = []
    promises = 0  # `ack` lines: what an acks:N trigger counts
    deadline = started + timeout
    while not _triggered(trigger, promises, write_log, started):
        try:
            line = m.acks.get(timeout=min(1.0, max(0.01, deadline - time.monotonic())))
        except GuestTimeout:
            stop_on_host_io_error(m, write_log)
            if trouble := console.trouble():  # a hung task or a soft lockup, say
                return acks, None, trouble
            if time.monotonic() > deadline:
                raise GuestTimeout(f"workload did not finish in {timeout:.0f} s") from None
            continue
        if line is None:
            if trouble := console.trouble():
                return acks, None, trouble
            raise InfraError("the ack stream closed before the power cut (QEMU died?)")
        words = line.text.split()
        if words[:1] in (["ack"], ["commit"]):  # commit: acknowledged, not promised (Ack.kind)
            acks.append((_ack_id(words, line.text), line.stamp, words[0]))
            promises += words[0] == "ack"
            if progress:
                progress(len(acks))
        elif words[:1] == ["done"]:
            return acks, int(words[1]), None
    return acks, None, None


def _ack_id(words: list[str], text: str) -> int:
    """The ID of an `ack ID` line; a malformed one (a user's script wrote it) is bad input."""
    if len(words) == 2 and words[1].lstrip("-").isdigit():
        return int(words[1])
    raise UsageError(f"the workload wrote a malformed ack line {text.strip()[:80]!r}: expected 'ack ID', "
                     "ID a whole number")


def stop_on_host_io_error(m, write_log: Path) -> None:
    """A guest paused on a host I/O error (no space for its disk or its write log) would
    wait out the workload's timeout and be blamed for it: stop now, as a harness failure."""
    error = m.io_error()
    if error is None:
        return
    if error.get("nospace"):
        raise DiskFull(write_log.parent, "QEMU paused the guest when a write to its disk or write log failed")
    raise InfraError(f"QEMU paused the guest on a host I/O error: {error.get('reason', 'unknown')}")


def stamped_acks(meta: dict, acks: list, logs: list[Path], sampler, sizes) -> list[Ack]:
    """Acks with the log positions their stamps stand for; with more than one disk, also the
    consistent cuts the sampler saw (into `meta`)."""
    meta["log"] = asdict(summarize(logs[0]))
    index = _indexer(logs[0])
    if len(logs) == 1:
        return [Ack(i, s, index(s), kind=k) for i, s, k in acks]
    meta["disks"] = len(logs)
    for n, path in enumerate(logs[1:], start=2):
        meta[f"log{n}"] = asdict(summarize(path))
    cuts = consistent_cuts([_indexer(path) for path in logs], sampler.samples + [sizes()])
    meta["cuts"] = cuts
    meta["sample_gap_ms"] = round(sampler.widest_gap * 1000, 1)
    indexers = [_indexer(path) for path in logs[1:]]
    return [Ack(i, s[0], index(s[0]), kind=k, others=tuple(ix(p) for ix, p in zip(indexers, s[1:])))
            for i, s, k in acks]


def consistent_cuts(indexers: list, samples: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The sampled log sizes as cuts (entries complete in each log), distinct and sorted."""
    return sorted({tuple(ix(size) for ix, size in zip(indexers, sample)) for sample in samples})


def _indexer(write_log: Path):
    """log size in bytes -> entries complete below it, by bisection over the entries' ends."""
    ends = [e.end_offset for e in iter_entries(write_log)]
    return lambda size: bisect.bisect_right(ends, size)


class Sampler:
    """Samples every write log's size every `interval` seconds, as a double collect: the
    sizes are read twice and kept only if both reads agree. A log only grows, so each log
    held that size from its first read to its second, and at any moment between the end of
    the first collect and the start of the second all logs held exactly those prefixes: a
    consistent cut across the disks, which have no order between them otherwise. A moment
    of the run is at most `widest_gap` (the interval, more when writes kept a collect from
    agreeing) from a sampled cut."""

    def __init__(self, sizes, interval: float = 0.005, clock=time.monotonic):
        self.samples: list = []
        self.widest_gap = 0.0
        self._sizes, self._interval, self._clock = sizes, interval, clock
        self._last = clock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="plugpull-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self._interval):
            self.sample()

    def sample(self) -> bool:
        """One double collect; whether it gave a consistent cut."""
        first = self._sizes()
        if self._sizes() != first:
            return False
        now = self._clock()
        self.widest_gap = max(self.widest_gap, now - self._last)
        self._last = now
        self.samples.append(first)
        return True

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        self.widest_gap = max(self.widest_gap, self._clock() - self._last)


def _triggered(trigger: Trigger, n_acks: int, write_log: Path, started: float) -> bool:
    if trigger.kind == "acks":
        return n_acks >= trigger.value
    if trigger.kind == "time":
        return time.monotonic() - started >= trigger.value
    if trigger.kind == "writes":
        return entry_index_at(write_log, os.stat(write_log).st_size) >= trigger.value
    return False
