"""`plugpull reproduce`: case files (suites/cases/*.toml) run as matrices on their kernels and
held to their [expect] tables, or a [replay] case's kept state rechecked; JUnit for a CI job.
(`plugpull reproducer`, a finding as a script, is cli/reproducer.)"""

import dataclasses
import sys
from pathlib import Path

from plugpull.cli.cluster import add_cluster_option, cluster_judging
from plugpull.cli.common import (EXIT_FOUND, EXIT_INFRA, EXIT_OK, add_guest_options, checked_output, fraction,
                                 guest_backend, kernel_list)
from plugpull.cli.crash import add_hosts_option, checker_hosts
from plugpull.cli.matrix import finish_matrix
from plugpull.errors import UsageError
from plugpull.files import a_case_file, an_output


def add_parsers(sub) -> None:
    rp = sub.add_parser("reproduce", help="run a case file (suites/cases/*.toml)")
    add_guest_options(rp)
    rp.add_argument("case", type=a_case_file, nargs="+", help="case files, run one after the other")
    rp.add_argument("--scale", type=fraction, default=1.0, help="shrink the workloads (0 < scale <= 1)")
    rp.add_argument("--results", type=an_output, help="default results/CASE.jsonl")
    rp.add_argument("--report", type=an_output)
    rp.add_argument("--junit", type=an_output, metavar="FILE",
                    help="JUnit XML, one testcase per case x kernel x mode, written at the end")
    add_hosts_option(rp)
    add_cluster_option(rp)
    rp.add_argument("--no-crash", action="store_true", help="the throughput side alone (the seeds' figures)")
    rp.set_defaults(func=cmd_reproduce)


def cmd_reproduce(args) -> int:
    """Each case file in turn, every one checked before the first runs, by the case engine
    (`runs.caserun`); the worst exit code of theirs (3, then 1). With several cases or
    --junit, a harness failure ends its case alone; --junit writes one testcase per case x
    kernel x mode at the end."""
    from plugpull.report.junit import write_junit
    from plugpull.report.junitcases import case_suite
    from plugpull.runs.matrix import kernel_tag

    judging = cluster_judging(args, reach=False)
    if judging and args.no_crash:
        raise UsageError("--cluster checks the crash states, and --no-crash drops them")
    planned = checked_cases(args)
    if judging:
        judging.reach()
    backend = guest_backend(args)
    codes, suites = [], []
    for case, kernels in planned:
        outcome = reproduce_case(args, case_request(args, case, kernels, backend, judging))
        if outcome.error is not None:
            if len(planned) == 1 and not args.junit:
                raise outcome.error
            print(f"plugpull: {case.path}: harness failure (not a filesystem verdict): {outcome.harness}",
                  file=sys.stderr)
        codes.append(exit_code(outcome))
        if args.junit:
            error = outcome.harness if outcome.error is not None else None
            suites.append(case_suite(case, [(name, kernel_tag(k)) for name, k in kernels], outcome.finished(), error,
                                     case_results(args, case), args.no_crash))
    if args.junit:
        write_junit(args.junit, suites)
        print(f"junit:   {args.junit}")
    return EXIT_INFRA if EXIT_INFRA in codes else max(codes)


def exit_code(outcome) -> int:
    """3 when the harness failed, else 1 when the case's [expect] table is not borne out."""
    if outcome.harness is not None:
        return EXIT_INFRA
    return EXIT_FOUND if outcome.failures else EXIT_OK


def case_request(args, case, kernels: list, backend, judging):
    """What the case engine is asked for this case: the command line's options, filled in."""
    from plugpull.runs.caserun import CaseRequest

    return CaseRequest(case, tuple(kernels), results=None if case.replay else case_results(args, case),
                       accel=args.accel, backend=backend, hosts=case_hosts(args, case, judging), cluster=judging,
                       scale=args.scale, no_crash=args.no_crash)


def case_results(args, case) -> Path:
    return args.results or Path("results") / f"{case.path.stem}.jsonl"


def checked_cases(args) -> list:
    """[(case, its kernels)]: every case file read and checked, every kernel named, and the
    output paths tried, before any case runs."""
    from plugpull.runs.cases import load_case

    if len(args.case) > 1 and (args.results or args.report):
        raise UsageError("--results and --report are one case's: with several case files, leave them out "
                         "(each case writes results/CASE.jsonl)")
    stems = [p.stem for p in args.case]
    if twice := next((s for s in stems if stems.count(s) > 1), None):
        raise UsageError(f"two case files named {twice}: their results would share results/{twice}.jsonl")
    if args.junit:
        checked_output(args.junit, "--junit", parent_must_exist=False)
    if args.report:
        checked_output(args.report, "--report", parent_must_exist=False, directory=True)
    planned, named = [], {}
    for path in args.case:
        case = load_case(path, args.scale)
        if case.replay and (args.results or args.report or args.scale != 1 or args.no_crash):
            raise UsageError(f"{path}: --results, --report, --scale and --no-crash are for [matrix] cases; "
                             "a [replay] case rechecks one kept state")
        if args.no_crash:
            case = dataclasses.replace(case, cells=tuple(dataclasses.replace(c, crash=False) for c in case.cells))
        for cell in case.cells:
            cell.validate()
        if not case.replay:
            checked_output(case_results(args, case), "--results", parent_must_exist=False)
        default = ("host",) if case.replay else case.kernels
        planned.append((case, kernel_list(args, case_filesystems(case), default, named)))
    return planned


def case_filesystems(case) -> list[str]:
    """Every filesystem a case runs: its cells', its fault runs' and its kept state's."""
    faulted = [c.fs.name for c in case.faults.cases] if case.faults else []
    kept = [case.replay.meta["fs"]] if case.replay and case.replay.meta.get("fs") else []
    return [cell.fs for cell in case.cells] + faulted + kept


def reproduce_case(args, request):
    """One case checked by `checked_cases`, run by the case engine; then, a [matrix] case: its
    table and report, a [replay] case: each kernel's recheck; what was not reproduced."""
    from plugpull.runs.caserun import run_case
    from plugpull.runs.seedtable import reference_results

    outcome = run_case(request)
    if outcome.error is not None:
        return outcome
    if request.case.replay:
        for k in outcome.kernels:
            if len(outcome.kernels) > 1:
                print(f"kernel  {k.release} ({k.name})")
            _replayed(request.case.expected_on(k.name), k.replay)
        return outcome
    ran = [r for k in outcome.kernels for r in k.cells]
    faulted = [r for k in outcome.kernels for r in k.faults]
    finish_matrix(ran, request.results, args.report, faulted, reference_results(request.case.path, request.results))
    for f in outcome.failures:
        print(f"not reproduced: {f}")
    return outcome


def case_hosts(args, case, judging) -> tuple:
    """The hosts a case's states are checked on: --hosts, else its [hosts] table; none with
    --cluster, which stands in for both."""
    if judging:
        return ()
    if args.hosts:
        return checker_hosts(args.hosts)
    return checker_hosts(list(case.hosts), f"{case.path}: [hosts]")


def fs_lines(kernel_log: str, fs: str) -> list[str]:
    """The filesystem's own kernel messages ("XFS (sda): ...", "EXT4-fs error ..."), no traces."""
    lines = (line.partition("] ")[2] if line.startswith("[") else line for line in kernel_log.splitlines())
    return [line.strip() for line in lines if line.upper().startswith(fs.upper())]


def _replayed(case, r: dict) -> int:
    """A recheck said: its image, its verdict, the filesystem's last kernel lines, then what
    it does not bear out of `case`'s [expect] table; the exit code of that."""
    from plugpull.runs.caserun import replay_judged

    fs = case.replay.meta["fs"]
    same_image = r["digest"] == r["digest_expected"]
    print(f"image   {r['digest']}" + (f" ({'matches' if same_image else 'DIFFERS from ' + r['digest_expected']})"
                                      if r["digest_expected"] else ""))
    print(f"verdict {r['verdict']}: {r['reason']}")
    for line in fs_lines(r["kernel"], fs)[-8:]:
        print(f"  {line}")
    failures = replay_judged(case, r)
    if failures is None:
        return EXIT_INFRA
    for f in failures:
        print(f"not reproduced: {f}")
    if not failures:
        print("reproduced")
    return EXIT_FOUND if failures else EXIT_OK
