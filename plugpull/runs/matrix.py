"""The matrix runner: filesystem x mode x workload, throughput and crash safety per cell.

Results are JSON lines, one `CellResult` per cell (plugpull.results), each appended with a
single write and fsynced, so an interrupted run leaves at most one truncated last line
(readers skip it). A rerun skips the cells already done: the key hashes everything that
defines a cell.
"""

import hashlib
import json
import logging
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from plugpull.crash.judge import judge
from plugpull.crash.crashrun import run_crash
from plugpull.crash.spec import CrashPlan, CrashSpec, load_user_scripts
from plugpull.errors import InfraError, NothingChecked, UsageError
from plugpull.guest.contract.config import Bus
from plugpull.guest.qemu.machine import qemu_version
from plugpull.guest.rig import Rig, prepare_rig
from plugpull.results import CellResult, CrashSummary, Env, Throughput, append_line, read_cells
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.profiles import DEFAULT as DEFAULT_PROFILE, profile as disk_profile
from plugpull.testbed.workloads import SCRIPT_PREFIX
from plugpull.throughput.measure import measure

log = logging.getLogger(__name__)

DISK_BACKING = "raw file on the host's filesystem; a guest flush = the host's fdatasync"


@dataclass(frozen=True)
class Cell:
    """One cell of the matrix: a crash spec, and how its throughput is measured.
    `real_disk`: a block device for the throughput run, instead of the emulated disk."""

    spec: CrashSpec
    throughput: bool = True
    crash: bool = True
    overhead: bool = False
    profile: str = DEFAULT_PROFILE
    real_disk: str | None = None
    seed: dict | None = field(default=None, compare=False)  # a case's [seed] table; not in the key
    kernel: str = ""  # the guest kernel's release; "" for the host's, the default

    fs = property(lambda self: self.spec.fs)
    mode = property(lambda self: self.spec.mode)
    workload = property(lambda self: self.spec.workload)
    params = property(lambda self: self.spec.params)
    bus = property(lambda self: self.spec.bus)
    disk_mib = property(lambda self: self.spec.disk_mib)
    models = property(lambda self: self.spec.models)

    def validate(self) -> None:
        self.spec.resolve()
        disk_profile(self.profile)

    def to_json(self) -> dict:
        """The cell's settings as one flat JSON object, as stored in each result line. A budget,
        a stack and a lost disk only when set, and the kernel not in the key when it is the
        host's: the keys of cells without them stay those of earlier results."""
        spec = self.spec
        return {"fs": spec.fs, "mode": spec.mode, "workload": spec.workload, "params": list(spec.params),
                "bus": str(spec.bus), "disk_mib": spec.disk_mib, "throughput": self.throughput,
                "crash": self.crash, "states": spec.states, "models": list(spec.models), "seed": spec.seed,
                "trigger": spec.trigger, "overhead": self.overhead, "profile": self.profile,
                "real_disk": self.real_disk, **({"budget": spec.budget} if spec.budget else {}),
                **({"stack": spec.stack} if spec.stack else {}), **({"lose_disk": spec.lose_disk} if spec.lose_disk else {}),
                "kernel": self.kernel}

    def key(self) -> str:
        settings = {k: v for k, v in self.to_json().items() if k != "kernel" or v}
        doc = json.dumps(settings, sort_keys=True, default=list)
        return f"{self.fs}/{self.mode}/{self.workload}/{hashlib.sha256(doc.encode()).hexdigest()[:10]}"


def cells(base: CrashSpec, fss, modes, workloads, params: dict | None = None, **options) -> list[Cell]:
    """The cross product over `base`; `params` maps a workload name to its parameters, and
    `options` are the cells' own (throughput, crash, overhead, profile, real_disk)."""
    params = params or {}
    return [Cell(replace(base, fs=fs, mode=m, workload=w, params=tuple(sorted(params.get(w, {}).items()))),
                 **options)
            for fs in fss for w in workloads for m in modes]


def for_kernel(todo: list[Cell], release: str) -> list[Cell]:
    """The cells as run on the kernel `release` ("" for the host's): another key per kernel."""
    return [replace(cell, kernel=release) for cell in todo]


def with_user_scripts(todo: list[Cell], base: Path) -> list[Cell]:
    """The cells with each `script:PATH` workload and the check script read in (paths relative
    to `base`); the check script belongs to those cells alone."""
    scripted = [cell.workload.startswith(SCRIPT_PREFIX) for cell in todo]
    if any(cell.spec.check_script for cell in todo) and not any(scripted):
        raise UsageError(f"--check-script is for a {SCRIPT_PREFIX}PATH workload, and none is given")
    return [replace(cell, spec=load_user_scripts(cell.spec if mine else replace(cell.spec, check_script=""), base))
            for cell, mine in zip(todo, scripted)]


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


def run_cell(cell: Cell, rig: Rig, work: Path, artifacts: Path, judging=judge) -> CellResult:
    """Both measurements of one cell; the states that are not clean are saved in `artifacts`.
    A harness failure ends the cell with what was measured before it. `judging`: what
    judges the crash states (`run_crash`'s: this machine's checker guests, or a cluster's)."""
    plan = cell.spec.resolve()
    env = environment(rig, cell.bus, cell.profile, cell.real_disk)
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    started = time.monotonic()
    throughput = crash = error = None
    try:
        if cell.throughput:
            throughput = measure_throughput(cell, plan, rig, work)
        if cell.crash:
            crash = measure_crash(cell, rig, artifacts, judging)
    except InfraError as e:
        error = f"harness failure (not a verdict): {e}"
    except NothingChecked as e:
        error = f"nothing checked (not a verdict): {e}"
    return CellResult(key=cell.key(), fs=cell.fs, mode=cell.mode, workload=cell.workload,
                      params=tuple(plan.workload.params().items()), settings=cell.to_json(), env=env, started=started_at,
                      seconds=time.monotonic() - started, throughput=throughput, crash=crash, error=error,
                      seed=cell.seed)


def measure_throughput(cell: Cell, plan: CrashPlan, rig: Rig, work: Path) -> Throughput:
    """The cell's throughput on its disk profile (or real disk); with `overhead`, also the
    workload's time under the recorder over its time without it."""
    log.info(f"  throughput: {cell.workload} on {cell.fs} ({cell.mode})")
    real = Path(cell.real_disk) if cell.real_disk else None
    fs, mode, wl = plan.fs, plan.mode, plan.workload
    bed = BedSpec(fs, mode, wl, cell.disk_mib, cell.bus, None if real else disk_profile(cell.profile), real,
                  stack=plan.stack)
    result = measure(work / "throughput", bed, rig)
    if not cell.overhead:
        return result
    bare = BedSpec(fs, mode, wl, cell.disk_mib, cell.bus, host_flush=False)
    plain = measure(work / "plain", bare, rig)
    recorded = measure(work / "recorded", bare, rig, recorded=True)
    overhead = (sum(p.seconds or 0 for p in recorded.phases) /
                max(1e-9, sum(p.seconds or 0 for p in plain.phases)))
    return replace(result, recorder_overhead=overhead)


def measure_crash(cell: Cell, rig: Rig, artifacts: Path, judging=judge) -> CrashSummary:
    run = run_crash(cell.spec, rig, artifacts, judging=judging)
    if artifacts.is_dir() and any(artifacts.iterdir()):
        return run.crash_summary(artifacts=str(artifacts))
    if artifacts.is_dir():
        artifacts.rmdir()
    return run.crash_summary()


def run_matrix(todo: list[Cell], results: Path, rig: Rig, workdir: Path, judging=None) -> list[CellResult]:
    """The cells not yet in `results`, each appended as it ends; `judging` (None: `judge`)
    judges their crash states."""
    for cell in todo:
        cell.validate()
    done = done_keys(results)
    pending = [c for c in todo if c.key() not in done]
    if len(pending) < len(todo):
        log.info(f"{len(todo) - len(pending)} of {len(todo)} cells already in {results}: skipped")
    out, started = [], time.monotonic()
    for i, cell in enumerate(pending):
        elapsed = time.monotonic() - started
        eta = f", eta {elapsed / i * (len(pending) - i):.0f} s" if i else ""
        on = f" on {cell.kernel}" if cell.kernel else ""
        log.info(f"[cell {i + 1}/{len(pending)}{eta}] {cell.fs} {cell.mode} {cell.workload}{on}")
        work = workdir / f"cell-{i}"
        artifacts = results.parent / f"{results.stem}-artifacts" / cell.key().replace("/", "-")
        try:
            result = run_cell(cell, rig, work, artifacts, judging or judge)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        append_line(results, result.to_json())
        out.append(result)
        if result.error:
            log.warning(f"  {result.error}")
    return out


def kernel_tag(kernel) -> str:
    """What a matrix cell records of its kernel: the release, "" for the host's."""
    return kernel.release if kernel is not None else ""


def run_on_kernels(kernels: list, accel, backend, hosts: tuple, run) -> list:
    """`run(rig, name, kernel_tag, work)` on each (name, kernel) in turn, its guest image ready
    first (`accel`, `backend`, and `hosts` to check states on); the results of all, in order."""
    from plugpull.paths import make_tempdir

    ran = []
    for i, (name, kernel) in enumerate(kernels):
        if len(kernels) > 1:
            print(f"[kernel {i + 1}/{len(kernels)}] {name}", file=sys.stderr)
        rig = prepare_rig(accel, kernel, backend, hosts)
        work = make_tempdir("matrix")
        try:
            ran += run(rig, name, kernel_tag(kernel), work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return ran
