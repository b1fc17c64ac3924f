"""The matrix runner: filesystem x mode x workload, throughput and crash safety per cell.

Results are JSON lines, one `CellResult` per cell (plugpull.results), each appended with a
single write and fsynced, so an interrupted run leaves at most one truncated last line
(readers skip it). A rerun skips the cells already done: the key hashes everything that
defines a cell.
"""

import hashlib
import json
import os
import platform
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from plugpull.guest.config import Bus
from plugpull.guest.rig import Rig
from plugpull.lab.crash import CrashSpec, run_crash
from plugpull.errors import InfraError
from plugpull.lab.fs import filesystem, mode as mode_named
from plugpull.lab.profiles import DEFAULT as DEFAULT_PROFILE, profile as disk_profile
from plugpull.progress import say
from plugpull.lab.throughput import measure
from plugpull.guest.machine import qemu_version
from plugpull.lab.workloads import workload as workload_named
from plugpull.results import CellResult, CrashSummary, Env, Throughput, append_line, read_cells

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


def done_keys(results: Path) -> set[str]:
    """Keys of the cells in `results` completed without a harness failure."""
    return {cell.key for cell in read_cells(results)[0] if not cell.error}


def environment(rig: Rig, bus: Bus, profile_name: str, real_disk: str | None = None) -> Env:
    p = disk_profile(profile_name)
    profile_text = ("none: the real disk's own latency" if real_disk else
                    f"{p.name}: {p.summary} (flush {p.flush_ms} ms, write-through write "
                    f"{p.write_through_ms} ms; throughput runs only)")
    return Env(
        disk_profile=profile_text,
        accel=str(rig.accel), qemu=qemu_version(), kernel=rig.image.kernel_release,
        packages=tuple(rig.image.manifest.get("packages", {}).items()), image=rig.image.key,
        host=f"{platform.machine()}, {os.cpu_count()} cores, {platform.release()}",
        disk_backing=(f"throughput: real disk {real_disk} passed through; crash states: " + DISK_BACKING
                      if real_disk else DISK_BACKING),
        bus=str(bus),
    )


def run_cell(cell: Cell, rig: Rig, work: Path, artifacts: Path) -> CellResult:
    """Both measurements of one cell; the states that are not clean are saved in `artifacts`.
    A harness failure ends the cell with what was measured before it."""
    wl = workload_named(cell.workload, **dict(cell.params))
    env = environment(rig, cell.bus, cell.profile, cell.real_disk)
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    started = time.monotonic()
    throughput = crash = error = None
    try:
        if cell.throughput:
            throughput = measure_throughput(cell, wl, rig, work)
        if cell.crash:
            crash = measure_crash(cell, rig, artifacts)
    except InfraError as e:
        error = f"harness failure (not a verdict): {e}"
    return CellResult(key=cell.key(), fs=cell.fs, mode=cell.mode, workload=cell.workload,
                      params=tuple(wl.params().items()), settings=cell.to_json(), env=env, started=started_at,
                      seconds=time.monotonic() - started, throughput=throughput, crash=crash, error=error)


def measure_throughput(cell: Cell, wl, rig: Rig, work: Path) -> Throughput:
    """The cell's throughput on its disk profile (or real disk); with `overhead`, also the
    workload's time under the recorder over its time without it."""
    fs, mode = filesystem(cell.fs), mode_named(cell.mode)
    say(f"  throughput: {cell.workload} on {cell.fs} ({cell.mode})")
    real = Path(cell.real_disk) if cell.real_disk else None
    result = measure(work / "throughput", fs, mode, wl, rig, cell.disk_mib, cell.bus,
                     profile=None if real else disk_profile(cell.profile), real_disk=real)
    if not cell.overhead:
        return result
    plain = measure(work / "plain", fs, mode, wl, rig, cell.disk_mib, cell.bus, host_flush=False)
    recorded = measure(work / "recorded", fs, mode, wl, rig, cell.disk_mib, cell.bus,
                       recorded=True, host_flush=False)
    overhead = (sum(p.seconds or 0 for p in recorded.phases) /
                max(1e-9, sum(p.seconds or 0 for p in plain.phases)))
    return replace(result, recorder_overhead=overhead)


def measure_crash(cell: Cell, rig: Rig, artifacts: Path) -> CrashSummary:
    run = run_crash(cell.crash_spec(), rig, artifacts)
    if any(artifacts.iterdir()):
        return run.crash_summary(artifacts=str(artifacts))
    artifacts.rmdir()
    return run.crash_summary()


def run_matrix(todo: list[Cell], results: Path, rig: Rig, workdir: Path) -> list[CellResult]:
    for cell in todo:
        cell.validate()
    done = done_keys(results)
    pending = [c for c in todo if c.key() not in done]
    if len(pending) < len(todo):
        say(f"{len(todo) - len(pending)} of {len(todo)} cells already in {results}: skipped")
    out, started = [], time.monotonic()
    for i, cell in enumerate(pending):
        elapsed = time.monotonic() - started
        eta = f", eta {elapsed / i * (len(pending) - i):.0f} s" if i else ""
        say(f"[cell {i + 1}/{len(pending)}{eta}] {cell.fs} {cell.mode} {cell.workload}")
        work = workdir / f"cell-{i}"
        artifacts = results.parent / f"{results.stem}-artifacts" / cell.key().replace("/", "-")
        try:
            result = run_cell(cell, rig, work, artifacts)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        append_line(results, result.to_json())
        out.append(result)
        if result.error:
            say(f"  {result.error}")
    return out
