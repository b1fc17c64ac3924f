"""`plugpull faults`: device faults under the filesystem (dm-flakey), a table over
filesystem x fault x workload of the verdicts and of the errnos the application was told."""

import time
from collections import Counter
from pathlib import Path

from plugpull.cli.common import EXIT_FOUND, EXIT_INFRA, EXIT_OK, add_guest_options, checked_output, kernel_source, \
    parse_params, print_table, whole_option
from plugpull.faults.faultspec import RUNS_MAX
from plugpull.values import COUNT_MAX, names, once_each
from plugpull.errors import UsageError
from plugpull.files import an_output
from plugpull.results.faults import UNSAFE_FAULT_VERDICTS

UNSAFE = UNSAFE_FAULT_VERDICTS


def add_parsers(sub) -> None:
    f = sub.add_parser("faults", help="inject device faults (dm-flakey) and judge what the application was told")
    add_guest_options(f)
    f.add_argument("--fs", default="ext4", help="filesystems, comma-separated (default ext4)")
    f.add_argument("--fault", action="append", required=True,
                   help="KIND[@TRIGGER][+SECONDS][,seed=N], repeatable; KIND: error-writes, drop-writes, "
                        "corrupt-writes, corrupt-reads, flaky:UP:DOWN; TRIGGER: acks:N, writes:N, time:S")
    f.add_argument("--workload", default="fsync-retry", help="workloads, comma-separated (default fsync-retry)")
    f.add_argument("--param", action="append", default=[], help="NAME=VALUE for the workloads")
    f.add_argument("--runs", type=whole_option(1, RUNS_MAX), default=1,
                   help=f"runs per cell, 1 to {RUNS_MAX} (default 1)")
    f.add_argument("--power-loss", metavar="MODELS",
                   help="then power loss: cut each run's write log after the fault came on and judge the cuts "
                        "with these power-loss models, comma-separated (prefix, reorder, ...)")
    f.add_argument("--cuts", type=whole_option(1, COUNT_MAX), help="with --power-loss: cuts per model and run "
                   "(default 4)")
    f.add_argument("--json", type=an_output, help="write every run here (atomically)")
    f.add_argument("--out", type=an_output, help="directory for the runs' consoles (default results/faults-...)")
    f.add_argument("--results", type=an_output,
                   help="JSON lines, a line per run appended as it ends (default OUT/faults.jsonl); "
                        "`plugpull report` renders it")
    f.add_argument("--report", type=an_output, help="report directory (default: beside the results)")
    f.add_argument("--fail-on-unsafe", action="store_true", help=f"exit 1 if a run is {', '.join(UNSAFE)}")
    f.set_defaults(func=cmd_faults)


def plan(args) -> list:
    """Every FaultCase the arguments ask for, checked before any guest boots."""
    from plugpull.faults.powercut import power_cuts
    from plugpull.faults.inject import FaultCase
    from plugpull.faults.faultspec import parse_fault
    from plugpull.testbed.fs import filesystem
    from plugpull.testbed.workloads import workload

    systems = [filesystem(n) for n in listed(args.fs, "--fs")]
    faults = listed([str(parse_fault(text)) for text in args.fault], "--fault")
    faults = [parse_fault(text) for text in faults]
    params = dict(parse_params(args.param))
    loads = [workload(n, **params) for n in listed(args.workload, "--workload")]
    if args.cuts is not None and args.power_loss is None:
        raise UsageError("--cuts is for --power-loss: without it no cut is made")
    cuts = power_cuts(args.power_loss, args.cuts or 4) if args.power_loss is not None else None
    return [FaultCase(fs, fault, w, power_cuts=cuts) for fs in systems for fault in faults for w in loads]


def listed(values: str | list, flag: str) -> list:
    """A comma-separated option's values (or a repeated option's), none given twice."""
    try:
        return once_each(list(names(values)) if isinstance(values, str) else values)
    except ValueError as e:
        raise UsageError(f"bad {flag}: {e}") from None


def cmd_faults(args) -> int:
    from plugpull.files import atomic_write_json
    from plugpull.guest.rig import prepare_rig
    from plugpull.log import run_log
    from plugpull.results import SCHEMA_VERSION
    from plugpull.runs.faultruns import run_faults

    cases = plan(args)
    if args.json:
        checked_output(args.json, "--json")
    out = checked_output(args.out or Path("results") / f"faults-{time.strftime('%Y%m%d-%H%M%S')}", "--out",
                         parent_must_exist=False, directory=True)
    results = checked_output(args.results or out / "faults.jsonl", "--results", parent_must_exist=False)
    if args.report:
        checked_output(args.report, "--report", parent_must_exist=False, directory=True)
    kernel = kernel_source(args, [case.fs.name for case in cases])
    with run_log(out / "faults.log"):
        rig = prepare_rig(args.accel, kernel)
        runs = run_faults(cases, args.runs, rig, out, results)
    if args.json:
        atomic_write_json(args.json, {"schema": SCHEMA_VERSION, "kind": "faults", "kernel": rig.image.kernel_release,
                                      "runs": [r.to_json() for r in runs]})
        print(f"results: {args.json}")
    print_faults(runs)
    finish_faults(results, args.report)
    if any(r.verdict == "infra-error" for r in runs):
        return EXIT_INFRA
    return EXIT_FOUND if args.fail_on_unsafe and any(r.unsafe for r in runs) else EXIT_OK


def print_faults(runs: list) -> None:
    print_table(*table(runs))
    header, rows = retry_table(runs)
    if rows:
        print()
        print_table(header, rows)


def finish_faults(results: Path, report_dir: Path | None) -> None:
    from plugpull.report import default_out_dir, report

    paths = report(results, report_dir or default_out_dir(results))
    print(f"results: {results}")
    print(f"report:  {paths['html']}")


def table(runs: list) -> tuple[tuple, list]:
    """(header, rows): a row per (fs, fault, workload), the verdict counts, and the errnos
    the application got from write, fsync and close (NAME:count)."""
    from plugpull.results import FAULT_VERDICTS
    from plugpull.results.faults import ERRNO_SYSCALLS

    runs = [_result(r) for r in runs]
    cells: dict = {}
    for r in runs:
        cells.setdefault((r.fs, r.fault, r.workload), []).append(r)
    header = ("fs", "fault", "workload", "runs", *FAULT_VERDICTS, *(f"{s} errno" for s in ERRNO_SYSCALLS), "corruption")
    cuts = any(r.power_loss for r in runs)
    header += ("after power loss",) if cuts else ()
    rows = []
    for key, group in cells.items():
        verdicts = Counter(r.verdict for r in group)
        errnos = [sum((r.errnos(s) for r in group), Counter()) for s in ERRNO_SYSCALLS]
        found = Counter(r.corruption for r in group if r.corruption)
        row = (*key, len(group), *(verdicts[v] for v in FAULT_VERDICTS), *(_counts(c) for c in errnos), _counts(found))
        rows.append(row + ((_power_loss(group),) if cuts else ()))
    return header, rows


def _result(run):
    """A FaultResult, from itself or from its JSON."""
    from plugpull.results import FaultResult

    return FaultResult.from_json(run) if isinstance(run, dict) else run


def _power_loss(group: list[dict]) -> str:
    """Per model, the verdicts of the power cuts after the fault: "prefix clean:3 data-loss:1"."""
    models: dict[str, Counter] = {}
    for r in group:
        for model, verdicts in r.power_loss.items():
            models.setdefault(model, Counter()).update(verdicts)
    return "; ".join(f"{model} {_counts(c)}" for model, c in models.items()) or "-"


def _counts(counter: Counter) -> str:
    """NAME:count, space-separated (spaces in a name become dashes), or "-"."""
    return " ".join(f"{k.replace(' ', '-')}:{n}" for k, n in sorted(counter.items())) or "-"


def retry_table(runs: list[dict]) -> tuple[tuple, list]:
    """fsync-retry runs: per run, whether the first fsync reported an error, whether the retry
    succeeded, and whether the new data was there after the remount."""
    header = ("fs", "fault", "error at first fsync", "retry succeeds", "data present after remount", "verdict")
    rows = []
    for r in map(_result, runs):
        if r.workload != "fsync-retry" or r.verdict == "infra-error":
            continue
        first = [name for ident, call, name in r.errors if ident == 2 and call == "fsync"]
        retried = "yes" if 3 in (r.told.get("acks") or []) else ("no" if first else "not needed")
        rows.append((r.fs, r.fault, first[0] if first else "no", retried,
                     "yes" if r.version_after == 2 else "no", r.verdict))
    return header, rows
