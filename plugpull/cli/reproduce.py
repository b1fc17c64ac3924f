"""`plugpull reproduce`: case files (suites/cases/*.toml) run as matrices on their kernels and
held to their [expect] tables, or a [replay] case's kept state rechecked; JUnit for a CI job.
(`plugpull reproducer`, a finding as a script, is cli/reproducer.)"""

import dataclasses
import shutil
import sys
from pathlib import Path

from plugpull.cli.cluster import add_cluster_option, cluster_judging
from plugpull.cli.common import (EXIT_FOUND, EXIT_INFRA, EXIT_OK, add_guest_options, checked_output, describe,
                                 fraction, guest_backend, kernel_list, kernel_tag)
from plugpull.cli.crash import add_hosts_option, checker_hosts
from plugpull.cli.matrix import finish_matrix, run_on_kernels
from plugpull.errors import PlugpullError, ToolMissing, UsageError
from plugpull.files import a_case_file, an_output
from plugpull.guest.rig import prepare_rig
from plugpull.log import run_log


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
    """Each case file in turn, every one checked before the first runs; the worst exit code
    of theirs (3, then 1). With several cases or --junit, a harness failure ends its case
    alone; --junit writes one testcase per case x kernel x mode at the end."""
    from plugpull.report.junit import write_junit
    from plugpull.report.junitcases import case_suite

    judging = cluster_judging(args, reach=False)
    if judging and args.no_crash:
        raise UsageError("--cluster checks the crash states, and --no-crash drops them")
    planned = checked_cases(args)
    if judging:
        judging.reach()
    backend = guest_backend(args)
    codes, suites = [], []
    for case, kernels in planned:
        finished, harness = {}, None
        try:
            codes.append(reproduce_case(args, case, kernels, backend, finished, judging))
        except (UsageError, ToolMissing):
            raise
        except Exception as e:
            if len(planned) == 1 and not args.junit:
                raise
            harness = str(e) if isinstance(e, PlugpullError) else describe(e)
            print(f"plugpull: {case.path}: harness failure (not a filesystem verdict): {harness}", file=sys.stderr)
            codes.append(EXIT_INFRA)
        if args.junit:
            suites.append(case_suite(case, [(name, kernel_tag(k)) for name, k in kernels], finished, harness,
                                     case_results(args, case), args.no_crash))
    if args.junit:
        write_junit(args.junit, suites)
        print(f"junit:   {args.junit}")
    return EXIT_INFRA if EXIT_INFRA in codes else max(codes)


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


def reproduce_case(args, case, kernels: list, backend, finished: dict, judging=None) -> int:
    """One case checked by `checked_cases`, on its kernels; `finished` gets, per kernel whose
    run ended, its fault runs (a [replay] case: its recheck). `judging`: --cluster's, which
    checks the cells' crash states instead of the case's [hosts] (fault runs and a [replay]
    recheck stay on this machine)."""
    from plugpull.cli.faults import run_faults
    from plugpull.runs.matrix import for_kernel, run_matrix
    from plugpull.runs.seedtable import reference_results

    if case.replay:
        return reproduce_replay(args, case, kernels, backend, finished)
    results = case_results(args, case)
    plan = case.faults
    faults = f", {len(plan.cases) * plan.runs} fault runs" if plan else ""
    hosts = case_hosts(args, case, judging)
    print(f"{case.title}\n  {case.source}\n  {len(case.cells)} cells{faults}, scale {args.scale:g}"
          + (f", on {len(kernels)} kernels" if len(kernels) > 1 else ""), file=sys.stderr)

    def run(rig, name, tag, work):
        ran = run_matrix(for_kernel(list(case.cells), tag), results, rig, work, judging=judging)
        finished[name] = run_faults(list(plan.cases), plan.runs, rig, work / "faults", results) if plan else []
        return [(name, tag, ran, finished[name])]

    with run_log(results.with_suffix(".log")):
        per_kernel = run_on_kernels(args, kernels, backend, hosts, run)
    ran = [r for _, _, cells_ran, _ in per_kernel for r in cells_ran]
    faulted = [r for _, _, _, runs in per_kernel for r in runs]
    finish_matrix(ran, results, args.report, faulted, reference_results(case.path, results))
    failures = case_failures(case, results, per_kernel, args.no_crash)
    for f in failures:
        print(f"not reproduced: {f}")
    if any(r.error for r in ran) or any(r.verdict == "infra-error" for r in faulted):
        return EXIT_INFRA
    return EXIT_FOUND if failures else EXIT_OK


def case_hosts(args, case, judging) -> tuple:
    """The hosts a case's states are checked on: --hosts, else its [hosts] table; none with
    --cluster, which stands in for both."""
    if judging:
        return ()
    if args.hosts:
        return checker_hosts(args.hosts)
    return checker_hosts(list(case.hosts), f"{case.path}: [hosts]")


def case_failures(case, results: Path, per_kernel: list, no_crash: bool) -> list[str]:
    """What the case's [expect] table says and the results do not show, on each kernel (named
    when there are several; its own [expect.kernels] table where it has one): [expect] is about
    crash states, and about fault runs."""
    from plugpull.results import read_cells
    from plugpull.runs.cases import expectation_failures
    from plugpull.runs.faultcase import fault_expectation_failures
    from plugpull.runs.matrix import for_kernel

    done = {cell.key: cell for cell in read_cells(results)[0]}
    failures = []
    for name, tag, _, faulted in per_kernel:
        mine = [done[c.key()] for c in for_kernel(list(case.cells), tag) if c.key() in done]
        found = [] if no_crash else expectation_failures(case.expected_on(name), mine)
        found += fault_expectation_failures(case.faults.expect, faulted) if case.faults else []
        failures += [f"{tag or 'host kernel'}: {f}" if len(per_kernel) > 1 else f for f in found]
    return failures


def reproduce_replay(args, case, kernels: list, backend, finished: dict) -> int:
    """A [replay] case: its kept state rebuilt and rechecked as `plugpull replay` does, on each
    --kernel, then held to its [expect] table (exit 1 when the table is not borne out on one)."""
    from plugpull.paths import make_tempdir
    from plugpull.runs.replaycase import load_replay, run_replay

    scratch = make_tempdir("reproduce")
    codes = []
    try:
        loaded = load_replay(case.replay, scratch)
        print(f"{case.title}\n  {case.source}\n  replay: {case.replay.describe()}", file=sys.stderr)
        for name, kernel in kernels:
            rig = prepare_rig(args.accel, kernel, backend)
            if len(kernels) > 1:
                print(f"kernel  {rig.image.kernel_release} ({name})")
            finished[name] = run_replay(case.replay, rig, scratch, loaded)
            codes.append(_replayed(case.expected_on(name), finished[name]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return EXIT_INFRA if EXIT_INFRA in codes else max(codes)


def fs_lines(kernel_log: str, fs: str) -> list[str]:
    """The filesystem's own kernel messages ("XFS (sda): ...", "EXT4-fs error ..."), no traces."""
    lines = (line.partition("] ")[2] if line.startswith("[") else line for line in kernel_log.splitlines())
    return [line.strip() for line in lines if line.upper().startswith(fs.upper())]


def _replayed(case, r: dict) -> int:
    from plugpull.runs.cases import replay_failures

    fs = case.replay.meta["fs"]
    same_image = not r["digest_expected"] or r["digest"] == r["digest_expected"]
    print(f"image   {r['digest']}" + (f" ({'matches' if same_image else 'DIFFERS from ' + r['digest_expected']})"
                                      if r["digest_expected"] else ""))
    print(f"verdict {r['verdict']}: {r['reason']}")
    for line in fs_lines(r["kernel"], fs)[-8:]:
        print(f"  {line}")
    if r["verdict"] == "infra-error":
        return EXIT_INFRA
    failures = replay_failures(case, r["verdict"]) + ([] if same_image else ["the rebuilt state differs from the kept one"])
    for f in failures:
        print(f"not reproduced: {f}")
    if not failures:
        print("reproduced")
    return EXIT_FOUND if failures else EXIT_OK
