"""The power-cut engine: record a workload, build crash states, check them, write results.

    result = run_crash(CrashSpec(fs="xfs", mode="nobarrier", workload="fsync-files",
                                 models=("reorder",), states=50, seed=1), rig, out_dir)

Every state that is not clean is saved as an artifact that `replay` rebuilds and rechecks
without rerunning the workload.
"""

import gzip
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from plugpull.lab.checker import Checker, default_workers
from plugpull.guest.config import Bus
from plugpull.guest.rig import Rig
from plugpull.powerloss.crashstate import content_digest, materialize
from plugpull.files import atomic_path, atomic_write_json
from plugpull.errors import UsageError
from plugpull.lab.fs import filesystem, mode
from plugpull.powerloss.models import cut_points, parse_model, plan, stable_rng
from plugpull.progress import Progress, say
from plugpull.results import CrashRun, CrashTiming, StateResult
from plugpull.lab.record import Record, Trigger, record
from plugpull.lab.testbed import run_host, second
from plugpull.lab.verdict import Verdict, classify, required_acks
from plugpull.lab.workloads import workload
from plugpull.powerloss.writelog import iter_entries


@dataclass(frozen=True)
class CrashSpec:
    fs: str = "xfs"
    mode: str = "barrier"
    workload: str = "fsync-files"
    params: tuple = ()  # (name, value) pairs for the workload
    models: tuple = ("reorder",)
    states: int = 30  # per model
    seed: int = 1
    trigger: str = "acks:30"
    disk_mib: int = 512
    bus: Bus = Bus.AHCI
    cuts: str = ""  # cut points: "" = `states` seeded ones and the kill point; else a cut_points spec
    batch: int = 16  # crash states per checker guest boot
    workers: int = 0  # checker guests at once; 0: one per core (at most 2)

    def to_json(self) -> dict:
        """The spec's settings as a JSON object, as stored in `crash --json` results."""
        return {**asdict(self), "bus": str(self.bus), "params": dict(self.params)}

    def validate(self) -> None:
        filesystem(self.fs), mode(self.mode), Trigger.parse(self.trigger)
        workload(self.workload, **dict(self.params))
        for m in self.models:
            try:
                parse_model(m)
            except ValueError as e:
                raise UsageError(str(e)) from None
        if self.states < 1:
            raise UsageError("--states must be at least 1")
        if self.disk_mib < 64:
            raise UsageError("--disk-mib must be at least 64")
        if self.cuts:
            try:
                cut_points([], self.cuts, self.seed)
            except ValueError as e:
                raise UsageError(f"--cuts: {e}") from None
        if self.batch < 1 or self.workers < 0:
            raise UsageError("--batch must be at least 1 and --workers at least 0")


def model_for(mode_name: str, model: str) -> str:
    """The lying mode is a barrier recording under a model whose flushes do nothing."""
    spec = parse_model(model)
    if mode(mode_name).lying and not spec.lying:
        return str(parse_model(f"{model}+lying"))
    return str(spec)


def state_cuts(entries, n: int, seed: int) -> list[int]:
    """N distinct cut points (fewer if the log is shorter): the live kill point, the end of
    the log, and N-1 others drawn without replacement, seeded."""
    end = len(entries)
    others = stable_rng(seed, "cuts", end).sample(range(end), min(n - 1, end))
    return sorted({end, *others})


def pair_cuts(pairs: list, n: int, seed: int) -> list[tuple[int, int]]:
    """N of the consistent cuts sampled across the two disks' logs, always with the last."""
    pairs = [tuple(p) for p in pairs]
    others = stable_rng(seed, "pair-cuts", len(pairs)).sample(pairs[:-1], min(n - 1, len(pairs) - 1))
    return sorted({pairs[-1], *others})


def recording_mode(mode_name: str) -> str:
    return "barrier" if mode(mode_name).lying else mode_name


def run_crash(spec: CrashSpec, rig: Rig, out_dir: Path, keep_record: bool = False) -> CrashRun:
    spec.validate()
    fs = filesystem(spec.fs)
    wl = workload(spec.workload, **dict(spec.params))
    out_dir.mkdir(parents=True, exist_ok=True)
    work = out_dir / ".work"
    shutil.rmtree(work, ignore_errors=True)
    started = time.monotonic()
    try:
        say(f"recording {spec.workload} on {spec.fs} ({spec.mode}, {spec.bus}), power cut at {spec.trigger} ...")
        rec = record(work / "record", fs, mode(recording_mode(spec.mode)), wl, Trigger.parse(spec.trigger),
                     rig, spec.disk_mib, spec.bus)
        recorded = time.monotonic()
        log = rec.meta["log"]
        say(f"recorded {len(rec.acks)} acks, {log['writes']} writes, {log['flushes']} flushes "
            f"in {rec.meta['workload_seconds']:.1f} s")
        entries = list(iter_entries(rec.log))
        if rec.two_disks:
            cuts = pair_cuts(rec.meta["cut_pairs"], spec.states, spec.seed)
        elif spec.cuts:
            cuts = [(c, None) for c in cut_points(entries, spec.cuts, spec.seed)]
        else:
            cuts = [(c, None) for c in state_cuts(entries, spec.states, spec.seed)]
        jobs = [(model_for(spec.mode, model), cut, cut2) for model in spec.models for cut, cut2 in cuts]
        results = check_states(rec, entries, jobs, spec, rig, work / "states", wl, fs, out_dir)
        checked = time.monotonic()
        timing = CrashTiming(record_s=recorded - started, check_s=checked - recorded,
                             states_per_minute=60 * len(results) / max(checked - recorded, 1e-9))
        return CrashRun(spec=spec.to_json(), record={k: v for k, v in rec.meta.items() if k != "acks"},
                        states=tuple(results), timing=timing)
    finally:
        if not keep_record:
            shutil.rmtree(work, ignore_errors=True)


def build_state(rec: Record, entries, entries2, model: str, cut: int, cut2: int | None, seed: int, path: Path):
    """The crash state's image at `path`; with an external log disk, the pair (path, path2)."""
    materialize(rec.base, rec.log, plan(entries, cut, model, seed), path, digest=False)
    if cut2 is None:
        return path
    path2 = second(path)
    materialize(second(rec.base), second(rec.log), plan(entries2, cut2, model, seed), path2, digest=False)
    return path, path2


def check_states(rec: Record, entries, jobs, spec: CrashSpec, rig: Rig, state_dir: Path, wl, fs,
                 out_dir: Path) -> list[StateResult]:
    """Build every state (sparse, a few MiB each), check them on the checker guests, judge."""
    state_dir.mkdir(parents=True, exist_ok=True)
    checker = Checker(rig, fs, batch=spec.batch, workers=spec.workers or default_workers())
    entries2 = list(iter_entries(second(rec.log))) if rec.two_disks else None
    states = [build_state(rec, entries, entries2, model, cut, cut2, spec.seed, state_dir / f"state-{i:05d}.img")
              for i, (model, cut, cut2) in enumerate(jobs)]
    owed = [required_acks(rec.acks, cut, cut2) for _, cut, cut2 in jobs]
    collect = [wl.collect if required else "none" for required in owed]
    bar = Progress("checking states", len(jobs))
    observations = checker.check(states, progress=bar.advance, collect=collect)
    results: list[StateResult] = []
    for (model, cut, cut2), state, required, obs in zip(jobs, states, owed, observations):
        v = classify(fs, obs, wl, required)
        result = StateResult(
            fs=spec.fs, mode=spec.mode, workload=spec.workload, model=model, seed=spec.seed, cut=cut,
            verdict=str(v.verdict), reason=v.reason, acks_required=len(required), acks_lost=len(v.lost),
            fsck_rc=obs.fsck_rc, lost=[asdict(l) for l in v.lost[:20]], cut2=cut2,
        )
        if v.verdict is not Verdict.CLEAN:
            artifact = save_artifact(out_dir, rec, result, state, obs)
            result = StateResult(**{**asdict(result), "artifact": str(artifact)})
        results.append(result)
        for p in (state if isinstance(state, tuple) else (state,)):
            p.unlink(missing_ok=True)
    return results


def state_digest(state) -> str:
    return "".join(content_digest(p) for p in (state if isinstance(state, tuple) else (state,)))


def save_artifact(out_dir: Path, rec: Record, result: StateResult, images, obs) -> Path:
    """A state directory with what rebuilds and rechecks it; the record is stored once per run."""
    record_dir = out_dir / "record"
    if not (record_dir / "record.json").is_file():
        save_record(rec, record_dir)
    name = f"{result.model.replace(':', '_').replace('+', '_')}-cut{result.cut}"
    if result.cut2 is not None:
        name += f"-{result.cut2}"
    state = out_dir / "states" / name
    state.mkdir(parents=True, exist_ok=True)
    doc = {**asdict(result), "record": os.path.relpath(record_dir, state), "digest": state_digest(images),
           "evidence": {"fsck": obs.fsck_output, "mount": obs.mount_error, "kernel": obs.kernel_log}}
    write_json(state / "state.json", doc)
    return state


def save_record(rec: Record, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    pairs = [(rec.base, rec.log)] + ([(second(rec.base), second(rec.log))] if rec.two_disks else [])
    with atomic_path(dest, directory=True) as tmp:
        for base, log in pairs:
            run_host(["qemu-img", "convert", "-c", "-f", "raw", "-O", "qcow2", str(base),
                      str(tmp / base.with_suffix(".qcow2").name)])
            with open(log, "rb") as src, gzip.open(tmp / f"{log.name}.gz", "wb", compresslevel=3) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        shutil.copy(rec.dir / "record.json", tmp / "record.json")
        os.chmod(tmp, 0o755)


def load_record(saved: Path, scratch: Path) -> Record:
    """Unpack a saved record into scratch as a raw base image and a plain log."""
    scratch.mkdir(parents=True, exist_ok=True)
    for stem in ("base", "base2"):
        if (saved / f"{stem}.qcow2").is_file():
            run_host(["qemu-img", "convert", "-f", "qcow2", "-O", "raw", str(saved / f"{stem}.qcow2"),
                      str(scratch / f"{stem}.img")])
    for name in ("write.log", "write2.log"):
        if (saved / f"{name}.gz").is_file():
            with gzip.open(saved / f"{name}.gz", "rb") as src, open(scratch / name, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    shutil.copy(saved / "record.json", scratch / "record.json")
    return Record.load(scratch)


def write_json(path: Path, doc) -> None:
    atomic_write_json(path, doc)


def replay(state_dir: Path, rig: Rig, scratch: Path) -> dict:
    """Rebuild a saved state from its record, verify its hash, recheck it."""
    doc = json.loads((state_dir / "state.json").read_text())
    rec = load_record((state_dir / doc["record"]).resolve(), scratch / "record")
    fs = filesystem(doc["fs"])
    wl = workload(rec.meta["workload"], **rec.meta["params"])
    entries = list(iter_entries(rec.log))
    entries2 = list(iter_entries(second(rec.log))) if rec.two_disks else None
    cut2 = doc.get("cut2")
    state = build_state(rec, entries, entries2, doc["model"], doc["cut"], cut2, doc["seed"], scratch / "state.img")
    digest = state_digest(state)
    required = required_acks(rec.acks, doc["cut"], cut2)
    obs = Checker(rig, fs, batch=1).check([state], collect=[wl.collect if required else "none"])[0]
    v = classify(fs, obs, wl, required)
    return {"digest": digest, "digest_expected": doc["digest"], "verdict": str(v.verdict),
            "verdict_expected": doc["verdict"], "reason": v.reason, "lost": [asdict(l) for l in v.lost[:20]]}
