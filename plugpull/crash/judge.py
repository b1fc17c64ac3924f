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

from plugpull.check.checker import Checker, ScriptCollect
from plugpull.check.fsckchoice import FsckChoice
from plugpull.check.verdict import Observation, StateVerdict, Verdict, classify, required_acks
from plugpull.check.writehole import with_write_hole
from plugpull.crash.record import Record
from plugpull.powerloss.crashstate import CrashState, materialize
from plugpull.powerloss.models import Piece, plan
from plugpull.powerloss.writelog import iter_entries
from plugpull.testbed.bed import nth
from plugpull.testbed.workloads.script import CheckScriptError


class StateJob(NamedTuple):
    """Which state to build: a model and a cut (and the cuts in the other disks' logs)."""

    model: str
    cut: int
    others: tuple[int, ...] = ()

    @property
    def cuts(self) -> tuple[int, ...]:
        return (self.cut, *self.others)

    @property
    def where(self) -> str:
        return " and ".join(map(str, self.cuts))


class Judged(NamedTuple):
    verdict: StateVerdict
    observation: Observation
    state: CrashState
    owed: list[int]  # the acks the state owes
    distinct: int  # which distinct state the cut shares with others: its index in the plan


class Planned(NamedTuple):
    """The jobs' distinct states: per job the index of its state in `plans`, and per distinct
    state the pieces of each disk, in the order of the record's disks."""

    which: list[int]
    plans: list[tuple[list[Piece], ...]]


def plan_key(*disks: list[Piece]) -> bytes:
    """What a state's images depend on besides the record: the pieces that persist on each
    disk, in apply order (a later piece overwrites an earlier one where they overlap)."""
    h = hashlib.sha256()
    for part in disks:
        h.update(repr([(p.entry_index, p.first_sector, p.nr_sectors) for p in part]).encode() + b"|")
    return h.digest()


def disk_plans(every_entries: list[list], job: StateJob, seed: int) -> tuple[list[Piece], ...]:
    """The job's pieces on each disk: the job's model applied to each disk's log at its cut."""
    return tuple(plan(entries, cut, job.model, seed) for entries, cut in zip(every_entries, job.cuts))


def plan_states(rec: Record, jobs, seed: int, entries: list | None = None) -> Planned:
    """Group the jobs by the state they build; a state's number is the order it first appears."""
    entries = list(iter_entries(rec.log)) if entries is None else entries
    every_entries = [entries] + [list(iter_entries(log)) for log in rec.logs[1:]]
    seen: dict[bytes, int] = {}
    which, plans = [], []
    for job in (StateJob(*job) for job in jobs):
        pieces = disk_plans(every_entries, job, seed)
        key = plan_key(*pieces)
        if key not in seen:
            seen[key] = len(plans)
            plans.append(pieces)
        which.append(seen[key])
    return Planned(which, plans)


def build_state(rec: Record, pieces: tuple[list[Piece], ...], path: Path) -> CrashState:
    """The crash state's images: the first disk's at `path`, the others' beside it."""
    paths = [nth(path, i) for i in range(len(pieces))]
    for base, log, disk_pieces, image in zip(rec.bases, rec.logs, pieces, paths):
        materialize(base, log, disk_pieces, image, digest=False)
    return CrashState(tuple(paths))


class Batch(NamedTuple):
    """One record's part of `judge_many`: its jobs, judged by its workload's oracle, its states
    built in `state_dir`."""

    rec: Record
    jobs: list
    workload: object
    seed: int
    state_dir: Path
    entries: list | None = None
    planned: Planned | None = None


def judge(rec: Record, jobs, checker: Checker, workload, seed: int, state_dir: Path,
          entries: list | None = None, progress=None, planned: Planned | None = None) -> list[Judged]:
    """Build every distinct state (sparse, a few MiB each), check them all with `checker`,
    classify each job against the acks it owes. `entries`: the record's log entries, if
    already read; `planned`: `plan_states` of the jobs, if already made."""
    return judge_many([Batch(rec, jobs, workload, seed, state_dir, entries, planned)], checker, progress)[0]


def judge_many(batches: list[Batch], checker: Checker, progress=None,
               fsck: FsckChoice = FsckChoice()) -> list[list[Judged]]:
    """`judge` over several records at once: every batch's states in one `checker.check`, so
    its guests start once for all of them. Per batch, its jobs judged. `fsck`: which states
    the host's fsck reads (`fsck_wanted`)."""
    states: list[CrashState] = []
    collects, prepared = [], []
    try:
        for b in batches:
            jobs = [StateJob(*job) for job in b.jobs]
            b.state_dir.mkdir(parents=True, exist_ok=True)
            planned = b.planned or plan_states(b.rec, jobs, b.seed, b.entries)
            owed, committed = debts(b.rec, jobs)
            own = [build_state(b.rec, pieces, b.state_dir / f"state-{i:05d}.img") for i, pieces in enumerate(planned.plans)]
            states += own
            collects += shared_collects(b.workload, planned, owed)
            prepared.append((jobs, planned, owed, committed, own))
        if fsck.always:
            observations = checker.check(states, progress=progress, collect=collects)
        else:
            with checker.fsck_only(fsck_wanted(fsck, batches, prepared, checker)):
                observations = checker.check(states, progress=progress, collect=collects)
    except BaseException:
        remove_states(states)
        raise
    out, at = [], 0
    for b, (jobs, planned, owed, committed, own) in zip(batches, prepared):
        seen, at = observations[at:at + len(own)], at + len(own)
        out.append(judged_jobs(b.rec, jobs, planned, seen, own, owed, committed, checker, b.workload))
    return out


def fsck_wanted(fsck: FsckChoice, batches: list[Batch], prepared: list, checker: Checker):
    """Whether the host's fsck is to read state `index` of `judge_many`'s, given its
    observation without fsck: as `fsck` chooses, from its plan's digest and whether every
    cut that shares it was judged clean."""
    where = [(b, part, d) for b, part in zip(batches, prepared) for d in range(len(part[4]))]

    def wanted(index: int, obs: Observation) -> bool:
        b, (jobs, planned, owed, committed, _), d = where[index]
        clean = all(_classified(checker, obs, b.workload, owed[j], job, committed[j]).verdict is Verdict.CLEAN
                    for j, job in enumerate(jobs) if planned.which[j] == d)
        return fsck.wants(plan_key(*planned.plans[d]), clean)
    return wanted


def debts(rec: Record, jobs: list[StateJob]) -> tuple[list[list[int]], list[list[int]]]:
    """Per job, the acks it owes, and those of them that were commits."""
    return ([required_acks(rec.acks, job.cut, job.others) for job in jobs],
            [required_acks(rec.acks, job.cut, job.others, kind="commit") for job in jobs])


def judged_jobs(rec: Record, jobs: list[StateJob], planned: Planned, observations: list[Observation], states: list,
                owed: list, committed: list, checker: Checker, workload) -> list[Judged]:
    """Each job classified against its own acks, on the observation of the state it shares."""
    return [Judged(_classified(checker, observations[d], workload, required, job, told, rec.acks), observations[d],
                   states[d], required, d)
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
                committed: list[int], acks: list = ()) -> StateVerdict:
    """With a lost member, each lost ack the write hole explains says so (writehole)."""
    try:
        v = classify(checker.fs, obs, workload, required, committed=committed)
        return v if getattr(checker, "lost", None) is None else with_write_hole(v, workload, acks, required)
    except CheckScriptError as e:
        raise CheckScriptError(f"{e} (crash state {job.model} cut {job.where})") from None
