"""Judge crash states: build each from a record, check them in checker guests, classify.

The one routine behind the power-cut engine, `replay` and the crash-state benchmark:

    judged = judge(rec, [StateJob("reorder", 120), StateJob("prefix", 7)], checker, wl, seed, scratch)
    for verdict, observation, state, owed, distinct in judged:
        ...
    remove_states([j.state for j in judged])

Cuts whose plans persist the same pieces make one distinct state, built and checked once:
each cut inherits its observation, and is classified against the acks it owes itself (two
cuts with one image may owe different acks). The states are left on disk for the caller (an
artifact needs their digest); it removes them (`remove_states`).
"""

import hashlib
from pathlib import Path
from typing import NamedTuple

from plugpull.lab.checker import Checker, ScriptCollect
from plugpull.lab.record import Record
from plugpull.lab.testbed import second
from plugpull.lab.verdict import Observation, StateVerdict, classify, required_acks
from plugpull.lab.workloads.script import CheckScriptError
from plugpull.powerloss.crashstate import CrashState, materialize
from plugpull.powerloss.models import Piece, plan
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
    distinct: int  # which distinct state the cut shares with others: its index in the plan


class Planned(NamedTuple):
    """The jobs' distinct states: per job the index of its state in `plans`, and per distinct
    state its pieces (and the external log disk's, or None)."""

    which: list[int]
    plans: list[tuple[list[Piece], list[Piece] | None]]


def plan_key(pieces: list[Piece], pieces2: list[Piece] | None) -> bytes:
    """What a state's images depend on besides the record: the pieces that persist, in apply
    order (a later piece overwrites an earlier one where they overlap)."""
    h = hashlib.sha256()
    for part in (pieces, pieces2 or []):
        h.update(repr([(p.entry_index, p.first_sector, p.nr_sectors) for p in part]).encode() + b"|")
    return h.digest()


def plan_states(rec: Record, jobs, seed: int, entries: list | None = None) -> Planned:
    """Group the jobs by the state they build; a state's number is the order it first appears."""
    entries = list(iter_entries(rec.log)) if entries is None else entries
    entries2 = list(iter_entries(second(rec.log))) if rec.two_disks else None
    seen: dict[bytes, int] = {}
    which, plans = [], []
    for job in (StateJob(*job) for job in jobs):
        pieces = plan(entries, job.cut, job.model, seed)
        pieces2 = None if job.cut2 is None else plan(entries2, job.cut2, job.model, seed)
        key = plan_key(pieces, pieces2)
        if key not in seen:
            seen[key] = len(plans)
            plans.append((pieces, pieces2))
        which.append(seen[key])
    return Planned(which, plans)


def build_state(rec: Record, pieces: list[Piece], pieces2: list[Piece] | None, path: Path) -> CrashState:
    """The crash state's image at `path`; with an external log disk, its image beside it."""
    materialize(rec.base, rec.log, pieces, path, digest=False)
    if pieces2 is None:
        return CrashState.of(path)
    path2 = second(path)
    materialize(second(rec.base), second(rec.log), pieces2, path2, digest=False)
    return CrashState.of(path, path2)


def judge(rec: Record, jobs, checker: Checker, workload, seed: int, state_dir: Path,
          entries: list | None = None, progress=None, planned: Planned | None = None) -> list[Judged]:
    """Build every distinct state (sparse, a few MiB each), check them all with `checker`,
    classify each job against the acks it owes. `entries`: the record's log entries, if
    already read; `planned`: `plan_states` of the jobs, if already made."""
    jobs = [StateJob(*job) for job in jobs]
    state_dir.mkdir(parents=True, exist_ok=True)
    planned = planned or plan_states(rec, jobs, seed, entries)
    owed = [required_acks(rec.acks, job.cut, job.cut2) for job in jobs]
    committed = [required_acks(rec.acks, job.cut, job.cut2, kind="commit") for job in jobs]
    states: list[CrashState] = []
    try:
        for i, (pieces, pieces2) in enumerate(planned.plans):
            states.append(build_state(rec, pieces, pieces2, state_dir / f"state-{i:05d}.img"))
        observations = checker.check(states, progress=progress, collect=shared_collects(workload, planned, owed))
    except BaseException:
        remove_states(states)
        raise
    return [Judged(_classified(checker, observations[d], workload, required, job, told), observations[d], states[d],
                   required, d)
            for job, d, required, told in zip(jobs, planned.which, owed, committed)]


def shared_collects(workload, planned: Planned, owed: list[list[int]]) -> list:
    """Per distinct state, the strongest collect its cuts need: the one for every ack any of
    them owes (each cut is then classified against its own acks)."""
    union: list[set[int]] = [set() for _ in planned.plans]
    for d, required in zip(planned.which, owed):
        union[d].update(required)
    return [collect_for(workload, sorted(acks)) for acks in union]


def remove_states(states) -> None:
    for state in {id(s): s for s in states}.values():
        state.remove()


def collect_for(workload, required: list[int]):
    """What the checker brings back of a state for the workload's oracle. A user's check
    script runs on every state: it may find an inconsistency even where no ack is owed."""
    if workload.collect == "script":
        return ScriptCollect(workload.check, tuple(required))
    return workload.collect if required or workload.invariants else "none"


def _classified(checker: Checker, obs: Observation, workload, required: list[int], job: StateJob,
                committed: list[int]) -> StateVerdict:
    try:
        return classify(checker.fs, obs, workload, required, committed=committed)
    except CheckScriptError as e:
        where = f"{job.model} cut {job.cut}" + ("" if job.cut2 is None else f" and {job.cut2}")
        raise CheckScriptError(f"{e} (crash state {where})") from None
