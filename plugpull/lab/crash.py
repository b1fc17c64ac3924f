"""The power-cut engine: record a workload, build crash states, check them, write results.

    result = run_crash(CrashSpec(fs="xfs", mode="nobarrier", workload="fsync-files",
                                 models=("reorder",), states=50, seed=1), rig, out_dir)

Every state that is not clean is saved as an artifact that `replay` rebuilds and rechecks
without rerunning the workload.
"""

import gzip
import json
import logging
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from plugpull.lab.checker import Checker, default_workers
from plugpull.lab.spec import CrashSpec
from plugpull.guest.rig import Rig
from plugpull.powerloss.crashstate import CrashState
from plugpull.files import atomic_path, atomic_write_json
from plugpull.lab.fs import filesystem
from plugpull.lab.judge import StateJob, judge
from plugpull.powerloss.models import cut_points, stable_rng
from plugpull.progress import Progress
from plugpull.results import CrashRun, CrashTiming, StateResult
from plugpull.lab.record import Record, record
from plugpull.lab.testbed import EXTERNAL_LOG_MIB, run_host, second
from plugpull.lab.verdict import Verdict
from plugpull.lab.workloads import workload
from plugpull.paths import make_workdir
from plugpull.powerloss.writelog import iter_entries
from plugpull.space import MIB, allocated_bytes, require_free, space_is_fatal

log = logging.getLogger(__name__)


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


def run_crash(spec: CrashSpec, rig: Rig, out_dir: Path, keep_record: bool = False) -> CrashRun:
    """Record, cut, judge. The out dir is made only when the run starts writing, and a run
    that fails leaves none behind unless it saved something there."""
    plan = spec.resolve()
    require_free(out_dir, recording_need(plan.recording_bed), "recording the disk under test")
    fresh = not out_dir.exists()
    work = make_workdir(out_dir)
    started = time.monotonic()
    try:
        with space_is_fatal(out_dir):
            log.info(f"recording {spec.workload} on {spec.fs} ({spec.mode}, {spec.bus}), power cut at {spec.trigger} ...")
            rec = record(work / "record", plan.recording_bed, plan.trigger, rig)
            recorded = time.monotonic()
            written = rec.meta["log"]
            log.info(f"recorded {len(rec.acks)} acks, {written['writes']} writes, {written['flushes']} flushes "
                     f"in {rec.meta['workload_seconds']:.1f} s")
            entries = list(iter_entries(rec.log))
            jobs = [(str(model), cut, cut2) for model in plan.models for cut, cut2 in crash_cuts(rec, entries, spec)]
            require_free(work, len(jobs) * state_need(rec), f"building {len(jobs)} crash states")
            results = check_states(rec, entries, jobs, spec, rig, work / "states", plan.workload, plan.fs, out_dir)
        checked = time.monotonic()
        timing = CrashTiming(record_s=recorded - started, check_s=checked - recorded,
                             states_per_minute=60 * len(results) / max(checked - recorded, 1e-9))
        return CrashRun(spec=spec.to_json(), record={k: v for k, v in rec.meta.items() if k != "acks"},
                        states=tuple(results), timing=timing)
    finally:
        if not keep_record:
            shutil.rmtree(work, ignore_errors=True)
            if fresh and out_dir.is_dir() and not any(out_dir.iterdir()):
                out_dir.rmdir()


def recording_need(bed) -> int:
    """Bytes a recording may take before its log grows: the disk image can fill to its size."""
    return (bed.disk_mib + (EXTERNAL_LOG_MIB if bed.mode.external_log else 0)) * MIB


def state_need(rec: Record) -> int:
    """Bytes one crash state may take: its base image's blocks and every byte the log wrote,
    at most the disk's size (a state is sparse; all are built before checking starts)."""
    disks = [(rec.base, rec.log)] + ([(second(rec.base), second(rec.log))] if rec.two_disks else [])
    return sum(min(os.stat(base).st_size, allocated_bytes(base) + os.stat(log).st_size) for base, log in disks)


def crash_cuts(rec: Record, entries, spec: CrashSpec) -> list[tuple[int, int | None]]:
    """The cut points of a run: (cut, cut in the external log disk's log or None)."""
    if rec.two_disks:
        return pair_cuts(rec.meta["cut_pairs"], spec.states, spec.seed)
    if spec.cuts:
        return [(c, None) for c in cut_points(entries, spec.cuts, spec.seed)]
    return [(c, None) for c in state_cuts(entries, spec.states, spec.seed)]


def check_states(rec: Record, entries, jobs, spec: CrashSpec, rig: Rig, state_dir: Path, wl, fs,
                 out_dir: Path) -> list[StateResult]:
    """Judge every state on the checker guests; save an artifact for each that is not clean."""
    checker = Checker(rig, fs, batch=spec.batch, workers=spec.workers or default_workers())
    log.debug("checking %d crash states: %d per checker boot, %d checkers at once", len(jobs), spec.batch,
              checker.workers)
    bar = Progress("checking states", len(jobs))
    judged = judge(rec, jobs, checker, wl, spec.seed, state_dir, entries, progress=bar.advance)
    results: list[StateResult] = []
    for (model, cut, cut2), (v, obs, state, required) in zip(jobs, judged):
        result = StateResult(
            fs=spec.fs, mode=spec.mode, workload=spec.workload, model=model, seed=spec.seed, cut=cut,
            verdict=str(v.verdict), reason=v.reason, acks_required=len(required), acks_lost=len(v.lost),
            fsck_rc=obs.fsck_rc, lost=[asdict(l) for l in v.lost[:20]], cut2=cut2,
        )
        if v.verdict is not Verdict.CLEAN:
            artifact = save_artifact(out_dir, rec, result, state, obs)
            result = StateResult(**{**asdict(result), "artifact": str(artifact)})
        log.debug("%s cut %s%s: %s, %s (%d acks owed, %d lost, fsck rc %d)", model, cut,
                  "" if cut2 is None else f" and {cut2}", result.verdict, result.reason, len(required),
                  len(v.lost), obs.fsck_rc)
        results.append(result)
        state.remove()
    return results


def save_artifact(out_dir: Path, rec: Record, result: StateResult, state: CrashState, obs) -> Path:
    """A state directory with what rebuilds and rechecks it; the record is stored once per run."""
    record_dir = out_dir / "record"
    if not (record_dir / "record.json").is_file():
        save_record(rec, record_dir)
    name = f"{result.model.replace(':', '_').replace('+', '_')}-cut{result.cut}"
    if result.cut2 is not None:
        name += f"-{result.cut2}"
    where = out_dir / "states" / name
    where.mkdir(parents=True, exist_ok=True)
    doc = {**asdict(result), "record": os.path.relpath(record_dir, where), "digest": state.digest(),
           "evidence": {"fsck": obs.fsck_output, "mount": obs.mount_error, "kernel": obs.kernel_log}}
    write_json(where / "state.json", doc)
    return where


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
    wl = workload(rec.meta["workload"], **rec.meta["params"])
    checker = Checker(rig, filesystem(doc["fs"]), batch=1)
    job = StateJob(doc["model"], doc["cut"], doc.get("cut2"))
    [(v, _, state, _)] = judge(rec, [job], checker, wl, doc["seed"], scratch / "states")
    digest = state.digest()
    state.remove()
    return {"digest": digest, "digest_expected": doc["digest"], "verdict": str(v.verdict),
            "verdict_expected": doc["verdict"], "reason": v.reason, "lost": [asdict(l) for l in v.lost[:20]]}
