"""Record a workload: base image + write log + stamped acks, ended by a power cut.

The disk is formatted on the host (the same Debian xfsprogs/e2fsprogs the guest has) and a
sparse copy kept as the base; QEMU's blklogwrites driver then logs every write and flush the
guest makes while it writes through to the disk. A trigger decides when the plug is pulled.
"""

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from plugpull.config import Accel, Bus
from plugpull.errors import GuestTimeout, InfraError, UsageError
from plugpull.fs import Filesystem, Mode
from plugpull.testbed import MOUNTPOINT, testbed
from plugpull.verdict import Ack
from plugpull.writelog import entry_index_at, summarize


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
        if kind in ("acks", "writes", "time"):
            try:
                number = float(value) if kind == "time" else int(value)
            except ValueError:
                number = -1
            if number > 0:
                return cls(kind, number)
        raise UsageError(f"bad trigger {text!r}: use acks:N, writes:N, time:SECONDS or end")

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

    def save(self) -> None:
        tmp = self.dir / "record.json.tmp"
        tmp.write_text(json.dumps({**self.meta, "acks": [asdict(a) for a in self.acks]}, indent=1))
        os.replace(tmp, self.dir / "record.json")

    @classmethod
    def load(cls, directory: Path) -> "Record":
        data = json.loads((directory / "record.json").read_text())
        acks = [Ack(**a) for a in data.pop("acks")]
        return cls(directory, data, acks)


def record(directory: Path, fs: Filesystem, mode: Mode, workload, trigger: Trigger, image,
           accel: Accel, disk_mib: int = 512, bus: Bus = Bus.AHCI, timeout: float = 600.0,
           progress=None) -> Record:
    if mode.external_log:
        raise UsageError("crash states of the extlog mode need a write log per disk; not recorded yet")
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "write.log"
    meta = {
        "fs": fs.name, "mode": mode.name, "workload": workload.name, "params": workload.params(),
        "trigger": str(trigger), "disk_mib": disk_mib, "bus": str(bus), "image": image.key,
        "kernel": image.kernel_release, "packages": image.manifest.get("packages", {}),
    }
    acks: list[tuple[int, int]] = []
    with testbed(directory, fs, mode, workload, image, accel, disk_mib, bus, write_log=log,
                 base_copy=directory / "base.img", timeout=timeout) as bed:
        m = bed.machine
        meta["accel"] = str(m.accel)
        meta["queue_write_cache"] = bed.queue_write_cache
        m.acks.set_stamp(lambda: os.stat(log).st_size)
        script = workload.script(MOUNTPOINT)
        m.run("cat > /tmp/workload.sh <<'PLUGPULL_EOF'\n" + script + "PLUGPULL_EOF").check()
        started = time.monotonic()
        m.run("(sh /tmp/workload.sh > /tmp/workload.out 2>&1; echo \"done $?\" > /dev/plugpull-ack) "
              "</dev/null >/dev/null 2>&1 &").check()
        finished = None
        deadline = started + timeout
        while True:
            if _triggered(trigger, len(acks), log, started):
                break
            try:
                line = m.acks.get(timeout=min(1.0, max(0.01, deadline - time.monotonic())))
            except GuestTimeout:
                if time.monotonic() > deadline:
                    raise GuestTimeout(f"workload did not finish in {timeout:.0f} s") from None
                continue
            if line is None:
                raise InfraError("the ack stream closed before the power cut (QEMU died?)")
            words = line.text.split()
            if words[:1] == ["ack"]:
                acks.append((int(words[1]), line.stamp))
                if progress:
                    progress(len(acks))
            elif words[:1] == ["done"]:
                finished = int(words[1])
                break
        if finished not in (None, 0):
            detail = m.run("tail -n 20 /tmp/workload.out").text
        m.power_cut()
        meta["workload_seconds"] = time.monotonic() - started
    if finished not in (None, 0):
        raise InfraError(f"the workload failed in the guest (exit {finished}):\n{detail}")
    meta["workload_finished"] = finished == 0
    meta["log"] = asdict(summarize(log))
    rec = Record(directory, meta, [Ack(i, s, entry_index_at(log, s)) for i, s in acks])
    rec.save()
    return rec


def _triggered(trigger: Trigger, n_acks: int, log: Path, started: float) -> bool:
    if trigger.kind == "acks":
        return n_acks >= trigger.value
    if trigger.kind == "time":
        return time.monotonic() - started >= trigger.value
    if trigger.kind == "writes":
        return entry_index_at(log, os.stat(log).st_size) >= trigger.value
    return False
