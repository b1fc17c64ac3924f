"""`plugpull bisect --tree DIR --good REV --bad REV TEST`: the commit that broke a test (or,
with --fixed, fixed it), by git's own bisect in a private clone (plugpull.bisect). TEST is a
reproducer script (suites/reproducers/*.sh) or a case file (suites/cases/*.toml)."""

import argparse
import sys
from pathlib import Path

from plugpull.cli.common import EXIT_OK, add_guest_options, checked_output, guest_backend, \
    lock_writable, whole_option
from plugpull.errors import UsageError
from plugpull.files import a_path, an_output, read_regular

RUNS_MAX = 100


def add_parsers(sub) -> None:
    b = sub.add_parser("bisect", help="the commit of a kernel tree that broke (or fixed) a reproducer or a case")
    b.add_argument("test", type=a_path, help="a reproducer script (suites/reproducers/*.sh) or a "
                   "case file (suites/cases/*.toml): its FAIL (a case not reproduced) is bad, its PASS good")
    b.add_argument("--tree", type=a_path, required=True, metavar="DIR",
                   help="a git work tree of a kernel; only read (the bisect runs in a clone in plugpull's cache)")
    b.add_argument("--good", required=True, metavar="REV", help="a commit where the test passes")
    b.add_argument("--bad", required=True, metavar="REV", help="a commit where it fails")
    b.add_argument("--fixed", action="store_true", help="find the commit that fixed it: --bad is then the older")
    b.add_argument("--trust-ends", action="store_true", help="take --good and --bad as said: do not build and "
                   "test them before the steps (by default the test must FAIL at --bad and PASS at --good)")
    b.add_argument("--runs", type=whole_option(1, RUNS_MAX), default=3, metavar="N",
                   help="runs of the test per commit (default 3): bad if any fails, good if all pass")
    b.add_argument("--fs", metavar="FS", help="a live finding's script on FS instead of its own (its "
                   "suites/reproducers/NAME.sh); a case file: only its cells on FS")
    b.add_argument("--out", type=an_output, metavar="DIR", help="the bisect's directory, resumable "
                   "(default results/bisect-TEST)")
    add_guest_options(b)
    for action in b.declared:
        if action.dest in ("kernel", "modules"):  # each step boots the kernel it built
            action.help = argparse.SUPPRESS
    b.set_defaults(func=cmd_bisect)


def test_of(path: Path, fs: str | None):
    """TEST read and checked: ("sh", script text) or ("case", the case), and its bytes."""
    if path.suffix not in (".sh", ".toml"):
        raise UsageError(f"{path}: expected a reproducer script (.sh) or a case file (.toml)")
    try:
        data = read_regular(path, "TEST")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None
    if path.suffix == ".toml":
        return ("case", case_on(path, fs)), data
    if fs is None:
        return ("sh", data.decode(errors="replace")), data
    from plugpull.reproducer.findings import LIVE
    from plugpull.reproducer.suite import sh_text
    live = next((f for f in LIVE if f.name == path.stem), None)
    if live is None:
        raise UsageError(f"--fs {fs}: {path.name} is not a live finding's script (suites/reproducers/), whose "
                         "workload could be written for another filesystem")
    return ("sh", sh_text(live, fs)), data


def case_on(path: Path, fs: str | None):
    import dataclasses
    from plugpull.runs.cases import load_case
    case = load_case(path, 1.0)
    if case.replay:
        raise UsageError(f"{path}: a [replay] case rechecks one kept state: bisect runs [matrix] cases")
    if fs is not None:
        cells = tuple(c for c in case.cells if c.fs == fs)
        if not cells:
            raise UsageError(f"--fs {fs}: {path} has no cell on {fs}")
        case = dataclasses.replace(case, cells=cells)
    for cell in case.cells:
        cell.validate()
    return case


def cmd_bisect(args) -> int:
    from plugpull.bisect import BisectPlan, Journal, check_out, clone_for, revisions, run_bisect, settings, summary
    from plugpull.bisect.git import need_git
    from plugpull.bisect.journal import LOCK
    from plugpull.bisect.testers import builder, case_judge, script_judge
    from plugpull.locks import exclusive, hold

    need_git()
    if args.kernel is not None or args.modules is not None:
        raise UsageError("--kernel and --modules: bisect builds each commit's kernel; leave them out")
    if args.out is not None:
        checked_output(args.out, "--out", parent_must_exist=False, directory=True)
    rev = revisions(args.tree, args.good, args.bad, args.fixed)
    (kind, test), data = test_of(args.test, args.fs)
    recorded = settings(rev, args.test, data, args.runs, args.fs)
    out = args.out or Path("results") / f"bisect-{args.test.stem}{'-fixed' if args.fixed else ''}"
    checked_output(out, "--out", parent_must_exist=False, directory=True)
    check_out(out, recorded)
    lock_writable(out, LOCK)
    backend = guest_backend(args)
    clone = clone_for(rev.tree)
    with hold(out, LOCK, "bisect"), exclusive(clone.path.parent / ".lock"):  # the clone's workspace
        journal = Journal(out, recorded)
        if journal.left_out:
            print(f"{out / 'steps.jsonl'}: {journal.left_out} line(s) no reader can use, set aside in "
                  "steps.rejected; their commits are judged again", file=sys.stderr)
        judge = (script_judge(test, args.runs, args.accel, backend) if kind == "sh"
                 else case_judge(test, out, args.accel, backend))
        plan = BisectPlan(clone.ensure(rev.tree), journal, rev.terms, rev.new, rev.old)
        result = run_bisect(plan, builder(clone.path), judge, say=lambda line: print(line, file=sys.stderr, flush=True),
                            test_ends=not args.trust_ends)
        where = journal.save_result({**recorded, **result.to_json()})
    for line in summary(result, where):
        print(line)
    return EXIT_OK  # a bisect is not a check: it never exits 1; an end not as said is bad input, 2
