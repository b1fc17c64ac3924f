"""The bisect loop: git chooses each commit, `build` and `judge` test it, git is told.

    result = run_bisect(plan, build, judge, say)

`build(commit)` gives a kernel (whatever `judge` takes) and `judge(kernel)` a `Judged`; either
raises `Untestable` for a commit that cannot be tested (its build failed, the kernel under
test panicked, oopsed, hung or died while the test ran): git is told `skip`. Any other error
is the harness's and ends the bisect with no mark given, so it is never taken for a verdict.
The steps already in the journal are told to git again, not built or run again.
"""

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from plugpull.bisect.git import Clone, Position, subject
from plugpull.bisect.journal import Journal, Step

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
class Plan:
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
    steps: tuple[Step, ...]

    def to_json(self) -> dict:
        return {"first": self.first, "subject": self.subject, "term": self.terms.new,
                "candidates": list(self.candidates), "steps": [asdict(s) for s in self.steps]}


def run_bisect(plan: Plan, build: Callable, judge: Callable, say: Callable[[str], None] = print) -> Result:
    terms, clone = plan.terms, plan.clone
    done = {step.commit: step for step in plan.journal.steps()}
    position = clone.start(terms.old, terms.new, plan.new, plan.old)
    for step in done.values():
        if position.done:
            break
        position = clone.mark(step.mark, step.commit)
    if done:
        say(f"resumed: {len(done)} steps already judged ({plan.journal.out / 'steps.jsonl'})")
    number = len(done)
    while not position.done:
        commit = position.current
        step = done.get(commit)
        if step is None:
            number += 1
            step = test_commit(plan, commit, number, position, build, judge, say)
            done[commit] = step
        position = clone.mark(step.mark, commit)
        plan.journal.save_log(clone.log())
    return finish(plan, position, list(done.values()))


def test_commit(plan: Plan, commit: str, number: int, position: Position, build, judge, say) -> Step:
    """Build and judge one commit; its step, journaled before git is told."""
    title = subject(plan.clone.path, commit)
    say(f"step {number} of ~{number + position.left}: {commit[:12]} \"{title}\": building...")
    try:
        judged = judge(build(commit))
        mark, detail = plan.terms.mark(judged.passed), judged.detail
    except Untestable as e:
        mark, detail = SKIP, str(e)
    say(f"step {number}: {commit[:12]}: {detail} -> {mark}")
    step = Step(commit, title, mark, detail)
    plan.journal.add(step)
    return step


def finish(plan: Plan, position: Position, steps: list[Step]) -> Result:
    title = subject(plan.clone.path, position.first) if position.first else ""
    plan.journal.save_log(plan.clone.log())
    return Result(plan.terms, position.first, title, position.candidates, tuple(steps))


def summary(result: Result, out: Path) -> list[str]:
    """The last lines a bisect prints: the step log, then the commit found (or the candidates)."""
    lines = [f"  {s.commit[:12]} {s.mark:<7} {s.detail}  \"{s.subject}\"" for s in result.steps]
    lines.insert(0, f"steps ({len(result.steps)}):" if result.steps else "steps: none (the range holds one commit)")
    if result.first:
        lines.append(f"first {result.terms.new} commit: {result.first} \"{result.subject}\"")
    else:
        lines.append(f"no single first {result.terms.new} commit: only skipped commits are left; it is one of:")
        lines += [f"  {c}" for c in result.candidates]
    lines.append(f"result: {out}")
    return lines
