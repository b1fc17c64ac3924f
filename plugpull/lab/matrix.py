"""The matrix runner: filesystem x mode x workload, throughput and crash safety per cell.

Results are JSON lines, one per cell, each appended with a single write and fsynced, so an
interrupted run leaves at most one truncated last line (readers skip it). A rerun skips the
cells already done: the key hashes everything that defines a cell.
"""

import hashlib
import json
import logging
import os
import platform
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from plugpull.guest.config import Bus
from plugpull.guest.rig import Rig
from plugpull.lab.crash import CrashSpec, run_crash
from plugpull.errors import InfraError
from plugpull.lab.fs import filesystem, mode as mode_named
from plugpull.lab.profiles import DEFAULT as DEFAULT_PROFILE, profile as disk_profile
from plugpull.lab.throughput import measure
from plugpull.guest.machine import qemu_version
from plugpull.lab.workloads import workload as workload_named

log = logging.getLogger(__name__)

DISK_BACKING = "raw file on the host's filesystem; a guest flush = the host's fdatasync"
# A disk's volatile cache as it is: 32 MiB, destaged in any order. `reorder` (any subset of all
# unflushed writes) is harsher: on XFS it can drop a log write far behind the head, beyond the
# in-flight window log recovery expects, and so finds unmountable states even with barriers.
DEFAULT_MODEL = "cache:32:random"


@dataclass(frozen=True)
class Cell:
    fs: str
    mode: str
    workload: str
    params: tuple = ()
    bus: Bus = Bus.AHCI
    disk_mib: int = 512
    throughput: bool = True
    crash: bool = True
    states: int = 20
    models: tuple = (DEFAULT_MODEL,)
    seed: int = 1
    trigger: str = "end"
    overhead: bool = False
    profile: str = DEFAULT_PROFILE
    real_disk: str | None = None  # a block device for the throughput run, instead of the emulated disk

    def validate(self) -> None:
        filesystem(self.fs), mode_named(self.mode), workload_named(self.workload, **dict(self.params))
        disk_profile(self.profile)
        if self.crash:
            self.crash_spec().validate()

    def to_json(self) -> dict:
        """The cell's settings as a JSON object, as stored in each result line."""
        return {**asdict(self), "bus": str(self.bus)}

    def key(self) -> str:
        doc = json.dumps(self.to_json(), sort_keys=True, default=list)
        return f"{self.fs}/{self.mode}/{self.workload}/{hashlib.sha256(doc.encode()).hexdigest()[:10]}"

    def crash_spec(self) -> CrashSpec:
        return CrashSpec(fs=self.fs, mode=self.mode, workload=self.workload, params=self.params,
                         models=self.models, states=self.states, seed=self.seed, trigger=self.trigger,
                         disk_mib=self.disk_mib, bus=self.bus)


def cells(fss, modes, workloads, params: dict | None = None, **common) -> list[Cell]:
    """The cross product; `params` maps a workload name to its parameters."""
    params = params or {}
    return [Cell(fs, m, w, tuple(sorted(params.get(w, {}).items())), **common)
            for fs in fss for w in workloads for m in modes]


def load_cells(results: Path) -> dict[str, dict]:
    """key -> the last line written for it; a truncated last line is ignored."""
    cells_by_key: dict[str, dict] = {}
    if not results.is_file():
        return cells_by_key
    for line in results.read_text().splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("kind") == "cell" and "key" in doc:
            cells_by_key[doc["key"]] = doc
    return cells_by_key


def load_done(results: Path) -> set[str]:
    """Keys of the cells completed without a harness failure."""
    return {key for key, doc in load_cells(results).items() if not doc.get("error")}


def append_line(results: Path, doc: dict) -> None:
    """One write of one whole line on an O_APPEND descriptor, then fsync. After a torn last
    line (an interrupted run) the new line starts on a line of its own."""
    results.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(doc, sort_keys=True) + "\n").encode()
    if results.is_file() and results.stat().st_size:
        with open(results, "rb") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                data = b"\n" + data
    fd = os.open(results, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.write(fd, data) != len(data):
            raise OSError(f"short write to {results}")
        os.fsync(fd)
    finally:
        os.close(fd)


def environment(rig: Rig, bus: Bus, profile_name: str, real_disk: str | None = None) -> dict:
    p = disk_profile(profile_name)
    profile_text = ("none: the real disk's own latency" if real_disk else
                    f"{p.name}: {p.summary} (flush {p.flush_ms} ms, write-through write "
                    f"{p.write_through_ms} ms; throughput runs only)")
    return {
        "disk_profile": profile_text,
        "accel": str(rig.accel), "qemu": qemu_version(), "kernel": rig.image.kernel_release,
        "packages": rig.image.manifest.get("packages", {}), "image": rig.image.key,
        "host": f"{platform.machine()}, {os.cpu_count()} cores, {platform.release()}",
        "disk_backing": (f"throughput: real disk {real_disk} passed through; crash states: " + DISK_BACKING
                         if real_disk else DISK_BACKING),
        "bus": str(bus),
    }


def run_cell(cell: Cell, rig: Rig, work: Path, artifacts: Path) -> dict:
    """Both measurements of one cell; the states that are not clean are saved in `artifacts`."""
    fs, mode = filesystem(cell.fs), mode_named(cell.mode)
    wl = workload_named(cell.workload, **dict(cell.params))
    doc = {"kind": "cell", "key": cell.key(), "fs": cell.fs, "mode": cell.mode, "workload": cell.workload,
           "params": wl.params(), "cell": cell.to_json(),
           "env": environment(rig, cell.bus, cell.profile, cell.real_disk),
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "throughput": None, "crash": None}
    started = time.monotonic()
    try:
        if cell.throughput:
            log.info(f"  throughput: {cell.workload} on {cell.fs} ({cell.mode})")
            real = Path(cell.real_disk) if cell.real_disk else None
            doc["throughput"] = measure(work / "throughput", fs, mode, wl, rig, cell.disk_mib, cell.bus,
                                        profile=None if real else disk_profile(cell.profile), real_disk=real)
            if cell.overhead:
                plain = measure(work / "plain", fs, mode, wl, rig, cell.disk_mib, cell.bus, host_flush=False)
                recorded = measure(work / "recorded", fs, mode, wl, rig, cell.disk_mib, cell.bus,
                                   recorded=True, host_flush=False)
                doc["throughput"]["recorder_overhead"] = (
                    sum(p["seconds"] or 0 for p in recorded["phases"]) /
                    max(1e-9, sum(p["seconds"] or 0 for p in plain["phases"])))
        if cell.crash:
            result = run_crash(cell.crash_spec(), rig, artifacts)
            doc["crash"] = {"states": len(result["states"]), "models": list(cell.models),
                            "summary": result["summary"], "record": result["record"]["log"],
                            "states_per_minute": result["timing"]["states_per_minute"],
                            "artifacts": str(artifacts) if any(artifacts.iterdir()) else None}
            if not doc["crash"]["artifacts"]:
                artifacts.rmdir()
    except InfraError as e:
        doc["error"] = f"harness failure (not a verdict): {e}"
    doc["seconds"] = time.monotonic() - started
    return doc


def run_matrix(todo: list[Cell], results: Path, rig: Rig, workdir: Path) -> list[dict]:
    for cell in todo:
        cell.validate()
    done = load_done(results)
    pending = [c for c in todo if c.key() not in done]
    if len(pending) < len(todo):
        log.info(f"{len(todo) - len(pending)} of {len(todo)} cells already in {results}: skipped")
    out, started = [], time.monotonic()
    for i, cell in enumerate(pending):
        elapsed = time.monotonic() - started
        eta = f", eta {elapsed / i * (len(pending) - i):.0f} s" if i else ""
        log.info(f"[cell {i + 1}/{len(pending)}{eta}] {cell.fs} {cell.mode} {cell.workload}")
        work = workdir / f"cell-{i}"
        artifacts = results.parent / f"{results.stem}-artifacts" / cell.key().replace("/", "-")
        try:
            doc = run_cell(cell, rig, work, artifacts)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        append_line(results, doc)
        out.append(doc)
        if doc.get("error"):
            log.warning(f"  {doc['error']}")
    return out
