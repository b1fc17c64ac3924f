"""The bisect loop: git chooses each commit, `build` and `judge` test it, git is told.

    result = run_bisect(plan, build, judge, say)

`build(commit)` gives a kernel (whatever `judge` takes) and `judge(kernel)` a `Judged`; either
raises `Untestable` for a commit that cannot be tested (its build failed, the kernel under
test panicked, oopsed, hung or died while the test ran): git is told `skip`. Any other error
is the harness's and ends the bisect with no mark given, so it is never taken for a verdict.
The steps already in the journal are told to git again, not built or run again.
"""

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from plugpull.bisect.ends import check_ends
from plugpull.bisect.git import Clone, Position, subject
from plugpull.bisect.journal import BisectStep, Journal

SKIP = "skip"


class Untestable(Exception):
    """This commit cannot be tested: git is told skip, and the reason said."""


@dataclass(frozen=True)
class Judged:
    passed: bool
    detail: str  # "PASS 3/3", "FAIL at run 2 of 3: ..."


@dataclass(frozen=True)
class Terms:
    """git bisect's two terms: `old` the state at the older commit, `new` the one a commit
    brought. Finding what broke a test, its FAIL is new; finding what fixed it, its PASS is."""

    old: str
    new: str
    pass_is_new: bool

    def mark(self, passed: bool) -> str:
        return self.new if passed == self.pass_is_new else self.old


BROKE = Terms("good", "bad", pass_is_new=False)
FIXED = Terms("broken", "fixed", pass_is_new=True)


@dataclass(frozen=True)
class BisectPlan:
    """One bisect: `new` the commit in the state a commit brought (the bad one, or with
    FIXED the good one), `old` the commit before it."""

    clone: Clone
    journal: Journal
    terms: Terms
    new: str
    old: str


@dataclass(frozen=True)
class Result:
    terms: Terms
    first: str | None
    subject: str
    candidates: tuple[str, ...]
    steps: tuple[BisectStep, ...]
    ends: tuple[BisectStep, ...] = ()  # BAD's and GOOD's, tested before the steps; none if trusted

    def to_json(self) -> dict:
        return {"first": self.first, "subject": self.subject, "term": self.terms.new,
                "candidates": list(self.candidates), "ends": [asdict(s) for s in self.ends],
                "steps": [asdict(s) for s in self.steps]}


def run_bisect(plan: BisectPlan, build: Callable, judge: Callable, say: Callable[[str], None] = print,
               test_ends: bool = True) -> Result:
    """The first commit in the new state; first (unless `test_ends` is False) the two ends
    tested (plugpull.bisect.ends), EndRefused if one is not as said."""
    terms, clone, pace = plan.terms, plan.clone, Pace()
    journaled = {step.commit: step for step in plan.journal.steps()}
    done = {c: step for c, step in journaled.items() if c not in (plan.new, plan.old)}
    if journaled:
        both = "both ends and " if len(journaled) > len(done) else ""
        steps = f"{len(done)} step{'' if len(done) == 1 else 's'}"
        say(f"resumed: {both}{steps} already judged ({plan.journal.out / 'steps.jsonl'})")
    ends = ()
    if test_ends:
        def test_end(flag: str, commit: str) -> BisectStep:
            say(f"{flag} {commit[:12]} \"{subject(clone.path, commit)}\", tested before any step: building...")
            return pace.timed(judge_commit, plan, commit, build, judge)
        ends = check_ends(plan, journaled, test_end, say)
    position = clone.start(terms.old, terms.new, plan.new, plan.old)
    for step in done.values():
        if position.done:
            break
        position = clone.mark(step.mark, step.commit)
    number = len(done)
    while not position.done:
        commit = position.current
        step = done.get(commit)
        if step is None:
            number += 1
            say(f"step {number} of ~{number + position.left}: {commit[:12]} "
                f"\"{subject(clone.path, commit)}\": building...{pace.left(1 + position.left)}")
            step = pace.timed(judge_commit, plan, commit, build, judge)
            say(f"step {number}: {commit[:12]}: {step.detail} -> {step.mark}")
            plan.journal.add(step)
            done[commit] = step
        position = clone.mark(step.mark, commit)
        plan.journal.save_log(clone.log())
    return finish(plan, position, list(done.values()), ends)


def judge_commit(plan: BisectPlan, commit: str, build, judge) -> BisectStep:
    """Build and judge the commit checked out in the clone: its step (skip if untestable)."""
    try:
        judged = judge(build(commit))
        mark, detail = plan.terms.mark(judged.passed), judged.detail
    except Untestable as e:
        mark, detail = SKIP, str(e)
    return BisectStep(commit, subject(plan.clone.path, commit), mark, detail)


class Pace:
    """How long the commits tested so far took, for an estimate of the rest."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock, self.took = clock, []

    def timed(self, work: Callable, *args):
        started = self.clock()
        try:
            return work(*args)
        finally:
            self.took.append(self.clock() - started)

    def left(self, commits: int) -> str:
        """" (about 2 h 10 min left)" for `commits` more, from the mean so far; "" before any."""
        if not self.took:
            return ""
        seconds = sum(self.took) / len(self.took) * commits
        if seconds < 60:
            return " (under a minute left)"
        hours, minutes = divmod(round(seconds / 60), 60)
        return f" (about {f'{hours} h ' if hours else ''}{minutes} min left)"


def finish(plan: BisectPlan, position: Position, steps: list[BisectStep], ends: tuple[BisectStep, ...]) -> Result:
    title = subject(plan.clone.path, position.first) if position.first else ""
    plan.journal.save_log(plan.clone.log())
    return Result(plan.terms, position.first, title, position.candidates, tuple(steps), ends)


def summary(result: Result, out: Path) -> list[str]:
    """The last lines a bisect prints: the step log, then the commit found (or the candidates)."""
    lines = ["ends (BAD, then GOOD, tested first):" if result.ends else "ends: taken as said (--trust-ends)"]
    lines += [step_line(s) for s in result.ends]
    lines.append(f"steps ({len(result.steps)}):" if result.steps else "steps: none (the range holds one commit)")
    lines += [step_line(s) for s in result.steps]
    if result.first:
        lines.append(f"first {result.terms.new} commit: {result.first} \"{result.subject}\"")
    else:
        lines.append(f"no single first {result.terms.new} commit: only skipped commits are left; it is one of:")
        lines += [f"  {c}" for c in result.candidates]
    lines.append(f"result: {out}")
    return lines


def step_line(step: BisectStep) -> str:
    return f"  {step.commit[:12]} {step.mark:<7} {step.detail}  \"{step.subject}\""
