"""`plugpull bisect`: the commit of a user's kernel tree that broke (or fixed) a test, found by
git's own `git bisect` in a private clone, each commit built as `kernels build src:` builds and
judged by a reproducer script or a case file.

    rev = revisions(tree, "v5.10", "v5.11", fixed=False)
    plan = BisectPlan(clone_for(rev.tree).ensure(rev.tree), Journal(out, settings), rev.terms, rev.new, rev.old)
    result = run_bisect(plan, build, judge)      # build(commit) -> kernel; judge(kernel) -> Judged

`git` drives git (the user's tree only read); `journal` is the --out directory (resumable);
`ends` tests BAD and GOOD before any step; `engine` the loop and what each step's outcome
tells git; `plan` the command line resolved; `testers` the real build and the reproducer
script's judge.
"""

from plugpull.bisect.ends import EndRefused
from plugpull.bisect.engine import BROKE, FIXED, BisectPlan, Judged, Result, Terms, Untestable, run_bisect, summary
from plugpull.bisect.journal import BisectStep, Journal, check_out
from plugpull.bisect.plan import Revisions, clone_for, revisions, settings

__all__ = ["BROKE", "BisectPlan", "BisectStep", "EndRefused", "FIXED", "Journal", "Judged", "Result", "Revisions",
           "Terms", "Untestable", "check_out", "clone_for", "revisions", "run_bisect", "settings", "summary"]
