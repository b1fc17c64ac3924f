"""Judge crash states: build each from a record, check them in checker guests, classify.

The one routine behind the power-cut engine, `replay` and the crash-state benchmark:

    for verdict, observation, state, owed in judge(rec, [StateJob("reorder", 120)], checker, wl, seed, scratch):
        ...
        state.remove()

The states are left on disk for the caller (an artifact needs their digest); it removes them.
"""

from pathlib import Path
from typing import NamedTuple

from plugpull.lab.checker import Checker, ScriptCollect
from plugpull.lab.record import Record
from plugpull.lab.testbed import second
from plugpull.lab.verdict import Observation, StateVerdict, classify, required_acks
from plugpull.lab.workloads.script import CheckScriptError
from plugpull.powerloss.crashstate import CrashState, materialize
from plugpull.powerloss.models import plan
from plugpull.powerloss.writelog import iter_entries


class StateJob(NamedTuple):
    """Which state to build: a model and a cut (and the cut in the external log disk's log)."""

    model: str
    cut: int
    cut2: int | None = None


class Judged(NamedTuple):
    verdict: StateVerdict
    observation: Observation
    state: CrashState
    owed: list[int]  # the acks the state owes


def build_state(rec: Record, entries, entries2, model: str, cut: int, cut2: int | None, seed: int,
                path: Path) -> CrashState:
    """The crash state's image at `path`; with an external log disk, its image beside it."""
    materialize(rec.base, rec.log, plan(entries, cut, model, seed), path, digest=False)
    if cut2 is None:
        return CrashState.of(path)
    path2 = second(path)
    materialize(second(rec.base), second(rec.log), plan(entries2, cut2, model, seed), path2, digest=False)
    return CrashState.of(path, path2)


def judge(rec: Record, jobs, checker: Checker, workload, seed: int, state_dir: Path,
          entries: list | None = None, progress=None) -> list[Judged]:
    """Build every state (sparse, a few MiB each), check them all with `checker`, classify
    each against the acks it owes. `entries`: the record's log entries, if already read."""
    jobs = [StateJob(*job) for job in jobs]
    state_dir.mkdir(parents=True, exist_ok=True)
    entries = list(iter_entries(rec.log)) if entries is None else entries
    entries2 = list(iter_entries(second(rec.log))) if rec.two_disks else None
    states: list[CrashState] = []
    try:
        for i, job in enumerate(jobs):
            states.append(build_state(rec, entries, entries2, *job, seed, state_dir / f"state-{i:05d}.img"))
        owed = [required_acks(rec.acks, job.cut, job.cut2) for job in jobs]
        collect = [collect_for(workload, required) for required in owed]
        observations = checker.check(states, progress=progress, collect=collect)
    except BaseException:
        for state in states:
            state.remove()
        raise
    return [Judged(_classified(checker, obs, workload, required, job), obs, state, required)
            for job, state, required, obs in zip(jobs, states, owed, observations)]


def collect_for(workload, required: list[int]):
    """What the checker brings back of a state for the workload's oracle. A user's check
    script runs on every state: it may find an inconsistency even where no ack is owed."""
    if workload.collect == "script":
        return ScriptCollect(workload.check, tuple(required))
    return workload.collect if required else "none"


def _classified(checker: Checker, obs: Observation, workload, required: list[int], job: StateJob) -> StateVerdict:
    try:
        return classify(checker.fs, obs, workload, required)
    except CheckScriptError as e:
        where = f"{job.model} cut {job.cut}" + ("" if job.cut2 is None else f" and {job.cut2}")
        raise CheckScriptError(f"{e} (crash state {where})") from None
