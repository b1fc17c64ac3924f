"""The power-cut engine: record a workload, build crash states, check them, write results.

    result = run_crash(CrashSpec(fs="xfs", mode="nobarrier", workload="fsync-files",
                                 models=("reorder",), states=50, seed=1), rig, out_dir)

Every state that is not clean is saved as an artifact (`artifacts`) that `replay` rebuilds
and rechecks without rerunning the workload.
"""

import logging
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from plugpull.check.checker import Checker, Plug, default_workers
from plugpull.check.verdict import Verdict
from plugpull.crash.artifacts import load_state, saved_others, state_results
from plugpull.crash.judge import Planned, StateJob, disk_plans, judge, plan_key, plan_states, remove_states
from plugpull.crash.record import Record, record
from plugpull.crash.spec import CrashSpec, recorded_workload
from plugpull.errors import NothingChecked, UsageError
from plugpull.guest.rig import Rig
from plugpull.powerloss.cuts import cut_points, pair_cuts, refuse_too_big, spending_order, state_cuts
from plugpull.powerloss.writelog import iter_entries
from plugpull.progress import Progress
from plugpull.results import CrashRun, CrashTiming, StateResult
from plugpull.diskspace import MIB, allocated_bytes, require_free, space_is_fatal
from plugpull.testbed.bed import disk_mibs
from plugpull.testbed.fs import filesystem
from plugpull.testbed.stack import Stack
from plugpull.testbed.workloads.params import promised_acks
from plugpull.workdirs import make_workdir

log = logging.getLogger(__name__)

RECORDING = "recording"  # the model of the one result of a run whose recording guest crashed


def run_crash(spec: CrashSpec, rig: Rig, out_dir: Path, keep_record: bool = False, judging=judge) -> CrashRun:
    """Record, cut, judge. The out dir is made only when the run starts writing, and a run
    that fails leaves none behind unless it saved something there. `judging`: what judges
    the states, `judge`'s signature (this machine's checker guests; `--cluster`: its workers)."""
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
            if "kernel_crash" in rec.meta:
                return recording_crash(spec, rec, out_dir, recorded - started)
            written = rec.meta["log"]
            log.info(f"recorded {len(rec.acks)} acks, {written['writes']} writes, {written['flushes']} flushes "
                     f"in {rec.meta['workload_seconds']:.1f} s")
            refuse_vacuous(rec, plan.workload, spec.trigger)
            entries = list(iter_entries(rec.log))
            jobs = crash_jobs(rec, entries, spec, plan.models)
            planned = plan_states(rec, jobs, spec.seed, entries)
            require_free(work, len(planned.plans) * state_need(rec), f"building {len(planned.plans)} crash states")
            results = check_states(rec, entries, jobs, spec, rig, work / "states", plan.workload, plan.fs, out_dir,
                                   planned, judging)
        checked = time.monotonic()
        minutes = max(checked - recorded, 1e-9) / 60
        timing = CrashTiming(record_s=recorded - started, check_s=checked - recorded,
                             states_per_minute=len(results) / minutes,
                             distinct_per_minute=len({r.distinct for r in results}) / minutes)
        return CrashRun(spec=spec.to_json(), record={k: v for k, v in rec.meta.items() if k != "acks"},
                        states=tuple(results), timing=timing)
    finally:
        if not keep_record:
            shutil.rmtree(work, ignore_errors=True)
            if fresh and out_dir.is_dir() and not any(out_dir.iterdir()):
                out_dir.rmdir()


def recording_need(bed) -> int:
    """Bytes a recording may take before its log grows: the disk images can fill to their size."""
    return sum(disk_mibs(bed)) * MIB


def state_need(rec: Record) -> int:
    """Bytes one crash state may take: its base image's blocks and every byte the log wrote,
    at most the disk's size (a state is sparse; all are built before checking starts)."""
    disks = zip(rec.bases, rec.logs)
    return sum(min(os.stat(base).st_size, allocated_bytes(base) + os.stat(log).st_size) for base, log in disks)


def refuse_vacuous(rec: Record, wl, trigger: str) -> None:
    """A recording without an ack of a workload that sends some owes nothing: every state would
    be judged clean without its oracle being asked, so the run stops here instead. For the
    user's own script (which always comes with a check script) that is the user's input: exit 2."""
    if wl.user_supplied and not rec.acks:
        raise UsageError(f"the workload script sent no ack before the power cut ({trigger}): write a line "
                         "'ack ID' to fd 4 (echo \"ack 1\" >&4) once ID is durable; without one its check script "
                         "could find no loss, so no state was checked")
    promised = promised_acks(wl)
    if promised and not rec.acks:
        raise NothingChecked(f"the recording holds none of the {promised} acks {wl.name} sends "
                             f"(the power was cut at {trigger} before its first): no crash state "
                             "could show data loss, so none was checked")


def recording_crash(spec: CrashSpec, rec: Record, out_dir: Path, record_s: float) -> CrashRun:
    """The guest kernel failed while the workload ran: no states are built, and the run's one
    result is the recording's, model `recording`, verdict kernel-crash, with the console's
    words; the whole console log is kept as recording-console.log."""
    trouble = rec.meta["kernel_crash"]
    shutil.copyfile(rec.dir / "console.log", out_dir / "recording-console.log")
    result = StateResult(
        fs=spec.fs, mode=spec.mode, workload=spec.workload, model=RECORDING, seed=spec.seed,
        cut=rec.meta["log"]["entries"], verdict=str(Verdict.KERNEL_CRASH),
        reason=f"while recording: kernel {trouble['kind']}: {trouble['line']}"[:300],
        acks_required=0, acks_lost=0, fsck_rc=-1, kernel_excerpt=trouble["excerpt"],
    )
    return CrashRun(spec=spec.to_json(), record={k: v for k, v in rec.meta.items() if k != "acks"},
                    states=(result,), timing=CrashTiming(record_s=record_s, check_s=0.0, states_per_minute=0.0))


def recording_crashed(run: CrashRun) -> bool:
    return any(s.model == RECORDING for s in run.states)


def crash_cuts(rec: Record, entries, spec: CrashSpec) -> list[tuple[int, ...]]:
    """The cut points of a run: a cut in each disk's log. With a budget or --exhaustive every
    cut (or every --cuts one); else --states seeded ones. With more than one disk, the
    consistent cuts the recording sampled."""
    every = spec.budget or spec.exhaustive
    if rec.disks > 1:
        cuts = rec.consistent_cuts
        return cuts if every else pair_cuts(cuts, spec.states, spec.seed)
    if spec.cuts:
        return [(c,) for c in cut_points(entries, spec.cuts, spec.seed)]
    if every:
        return [(c,) for c in range(len(entries) + 1)]
    return [(c,) for c in state_cuts(entries, spec.states, spec.seed)]


def crash_jobs(rec: Record, entries, spec: CrashSpec, models) -> list[StateJob]:
    """The states of a run, by model then cut. With --budget N, the cuts in the order a budget
    spends them (`cuts.spending_order`), as far as N distinct states take them; with --exhaustive alone,
    every cut under every model, refused (UsageError) on a log too big for that."""
    pool = crash_cuts(rec, entries, spec)
    if spec.budget:
        order = spending_order(pool, entries, rec.acks, spec.seed, first=lambda cut: cut[0])
        kept = within_budget(rec, entries, candidates(models, order), spec.budget, spec.seed)
        rank = {str(model): i for i, model in enumerate(models)}
        return sorted(kept, key=lambda job: (rank[job.model], job.cuts))
    if spec.exhaustive:
        refuse_too_big(len(pool), len(models))
    return [StateJob(str(model), cut, tuple(others)) for model in models for cut, *others in pool]


def candidates(models, order: Sequence) -> list[StateJob]:
    """Every model at each cut in turn, so that a budget is shared between the models."""
    return [StateJob(str(model), *((cut[0], tuple(cut[1:])) if isinstance(cut, tuple) else (cut,)))
            for cut in order for model in models]


def within_budget(rec: Record, entries, jobs: Sequence[StateJob], budget: int, seed: int) -> list[StateJob]:
    """The leading jobs that need at most `budget` distinct states: a job whose state is
    already in is free, and the walk stops at the first that would need one more."""
    every_entries = [entries] + [list(iter_entries(log)) for log in rec.logs[1:]]
    seen: set[bytes] = set()
    kept = []
    for job in jobs:
        key = plan_key(*disk_plans(every_entries, job, seed))
        if key not in seen:
            if len(seen) == budget:
                break
            seen.add(key)
        kept.append(job)
    return kept


def check_states(rec: Record, entries, jobs, spec: CrashSpec, rig: Rig, state_dir: Path, wl, fs,
                 out_dir: Path, planned: Planned | None = None, judging=judge) -> list[StateResult]:
    """Judge every distinct state on the checker guests, each cut by the acks it owes; save
    an artifact for each cut whose verdict is not clean. `planned`: the jobs' plan_states;
    `judging`: `judge`, or what stands in for it (a cluster's)."""
    stack = Stack.parse(spec.stack)
    checker = Checker(rig, fs, batch=spec.batch or 1, plug=Plug.BATCH if spec.batch else Plug.HOT,
                      workers=spec.workers or default_workers(), stack=stack,
                      lost=stack.lost_member(spec.lose_disk, spec.seed) if stack else None)
    planned = planned or plan_states(rec, jobs, spec.seed, entries)
    log.debug("checking %d cuts, %d distinct crash states: %s, %d checkers at once", len(jobs), len(planned.plans),
              f"{spec.batch} per checker boot" if spec.batch else "hot-plugged", checker.workers)
    bar = Progress("checking states", len(planned.plans))
    judged = judging(rec, jobs, checker, wl, spec.seed, state_dir, entries, progress=bar.advance, planned=planned)
    labels = {"fs": spec.fs, "mode": spec.mode, "workload": spec.workload, "seed": spec.seed}
    results = state_results(rec, jobs, judged, labels, out_dir, checker.lost)
    remove_states([j.state for j in judged])
    return results


def replay(state_dir: Path, rig: Rig, scratch: Path, saved: tuple | None = None, pieces: list | None = None) -> dict:
    """Rebuild a saved state from its record, verify its hash, recheck it. `saved`: what
    `load_state` gave for it, if already loaded; `pieces`: the state's plan, where no model
    makes it (a minimised state)."""
    doc, rec = saved or load_state(state_dir, scratch)
    wl = recorded_workload(rec.meta["workload"], rec.meta["params"])
    stack = Stack.parse(rec.meta.get("stack", ""))
    lost = doc.get("lost_member")
    checker = Checker(rig, filesystem(doc["fs"]), batch=1, **({"stack": stack} if stack else {}),
                      **({"lost": lost} if lost is not None else {}))
    job = StateJob(doc["model"], doc["cut"], saved_others(doc))
    planned = Planned([0], [(pieces,)]) if pieces is not None else None
    [(v, obs, state, _, _)] = judge(rec, [job], checker, wl, doc["seed"], scratch / "states", planned=planned)
    digest = state.digest()
    state.remove()
    return {"digest": digest, "digest_expected": doc["digest"], "verdict": str(v.verdict),
            "verdict_expected": doc["verdict"], "reason": v.reason, "lost": [asdict(l) for l in v.lost[:20]],
            "broken": v.broken[:20], "acks_allowed": v.allowed, "mount": obs.mount_error, "kernel": obs.kernel_log}
