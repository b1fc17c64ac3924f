"""What a cluster task carries: states named, never shipped.

A distinct state is named by the record's digest, a job that builds it (model, cuts) and
the seed; its plan key (`crash.judge.plan_key`) comes along so that the worker can tell the
plan it made from the one the coordinator grouped by. Tasks hold a few states each, split as
the `--hosts` batches are (`check.spread.batches_for`), and land back at each state's index.
"""

import math
from dataclasses import dataclass

from plugpull.check.spread import batches_for
from plugpull.crash.judge import Planned, StateJob, plan_key


@dataclass(frozen=True)
class StateName:
    """One distinct crash state: what the worker needs to build it from the cached record."""

    index: int  # the state's number in the plan: where its observation lands
    record: str  # the record bundle's sha256
    model: str
    cuts: tuple[int, ...]
    seed: int
    key: str  # plan_key hex of the pieces the coordinator planned
    collect: object = "tar"  # what the oracle needs back ("tar", "sums", "none", a ScriptCollect)

    @property
    def job(self) -> StateJob:
        return StateJob(self.model, self.cuts[0], tuple(self.cuts[1:]))


def state_names(record: str, jobs: list[StateJob], planned: Planned, seed: int, collects: list) -> list[StateName]:
    """Per distinct state, in plan order, the name of the first job that builds it."""
    first: dict[int, StateJob] = {}
    for job, d in zip(jobs, planned.which):
        first.setdefault(d, StateJob(*job))
    return [StateName(d, record, first[d].model, tuple(first[d].cuts), seed, plan_key(*pieces).hex(), collects[d])
            for d, pieces in enumerate(planned.plans)]


TASKS_PER_THREAD = 2  # each task costs a round trip (and a guest, if none is kept): few, yet some left
# for a worker that frees up


def task_batches(names: list[StateName], per_task: int, threads: int) -> list[list[StateName]]:
    """States in tasks of `per_task` or, on a longer run, about `TASKS_PER_THREAD` tasks per
    worker thread; small enough that every thread gets one."""
    size = max(per_task, math.ceil(len(names) / (TASKS_PER_THREAD * max(1, threads))))
    return batches_for(names, size, threads)


def in_order(count: int, answers: list[list[tuple[int, object]]]) -> list:
    """The answers of every task, (index, value) pairs, as one list by index; a state
    answered twice or never is the harness's fault, never a verdict."""
    out: list = [None] * count
    seen = set()
    for answer in answers:
        for index, value in answer:
            if index in seen or not 0 <= index < count:
                raise ValueError(f"state {index} answered twice or out of range")
            seen.add(index)
            out[index] = value
    if len(seen) != count:
        raise ValueError(f"states {sorted(set(range(count)) - seen)[:10]} were never answered")
    return out
