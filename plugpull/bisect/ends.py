"""A bisect's two ends built and tested before git bisects between them, as a careful user of
`git bisect run` does: a bisect from ends that are not as said names a commit all the same,
and a wrong one, after hours of builds.

BAD is tested first: it is the end a bisect rests on and the one most often wrong (a test
that does not reproduce at all: flaky, too few --runs, another --fs, the wrong script), and
when it passes there is no need to build GOOD. An end not as said, or that cannot be tested,
stops the bisect in one line (exit 2, as bad input: the command line's claim is wrong). An end
that held is journaled like a step, so a resumed bisect does not test it again; one that did
not hold is not, so the same command tests it again.
"""

from dataclasses import dataclass
from typing import Callable

from plugpull.bisect.journal import BisectStep
from plugpull.errors import UsageError


class EndRefused(UsageError):
    """--good or --bad is not what the command line says of it: no step was run."""


@dataclass(frozen=True)
class End:
    flag: str      # "--bad" or "--good"
    commit: str
    passes: bool   # what the test must do there


def ends_of(plan) -> tuple[End, End]:
    """BAD, then GOOD; with --fixed (the PASS is new) BAD is the older commit."""
    bad, good = (plan.old, plan.new) if plan.terms.pass_is_new else (plan.new, plan.old)
    return End("--bad", bad, False), End("--good", good, True)


def check_ends(plan, journaled: dict[str, BisectStep], test: Callable[[str, str], BisectStep],
               say) -> tuple[BisectStep, ...]:
    """Each end's step, tested (`test(flag, commit)`, the clone checked out at it) unless journaled;
    EndRefused at the first end that is not as said."""
    held = []
    for end in ends_of(plan):
        step = journaled.get(end.commit)
        if step is None:
            plan.clone.checkout(end.commit)
            step = test(end.flag, end.commit)
            refuse_unless_held(end, step, plan.terms.mark(end.passes))
            plan.journal.add(step)
            say(f"{end.flag} {end.commit[:12]}: {step.detail} -> {step.mark}, as said")
        held.append(step)
    return tuple(held)


def refuse_unless_held(end: End, step: BisectStep, mark: str) -> None:
    if step.mark == mark:
        return
    where = f"{end.flag} {end.commit[:12]} \"{step.subject}\""
    if step.mark == "skip":
        raise EndRefused(f"{where} cannot be tested: {step.detail}; give another {end.flag}, or --trust-ends "
                         "to take both ends as said")
    must, hint = ("PASS", "a commit where it passes") if end.passes else \
        ("FAIL", "a commit where it fails; a flaky test may need more --runs")
    raise EndRefused(f"{where}: the test said {step.detail}, but it must {must} at {end.flag}: give {hint}")
