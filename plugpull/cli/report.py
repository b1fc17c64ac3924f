"""`plugpull report`: the table, plot and HTML pages of a matrix results file, or the findings
of one or more hunt directories."""

from pathlib import Path

from plugpull.cli.common import checked_output
from plugpull.errors import UsageError
from plugpull.files import a_path, an_output, check_input
from plugpull.log import add_log_options


def add_parsers(sub) -> None:
    rr = sub.add_parser("report", help="table, plot and HTML page from matrix results; findings from hunts")
    rr.add_argument("results", type=a_path, nargs="+",
                    help="a matrix results file (or a directory of them), or one or more hunt directories")
    rr.add_argument("--out", type=an_output, help="report directory (default: beside the results or the first hunt)")
    rr.add_argument("--reference", type=a_path, help="earlier results (suites/results/CASE.jsonl) to set beside")
    add_log_options(rr)
    rr.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from plugpull.report import report_main
    from plugpull.report.hunts import checked_out, hunt_report_main
    hunts = checked_report_inputs(args.results)  # each hunt read once: what its reading says is said once
    if hunts and args.reference:
        raise UsageError("--reference is for a matrix results file, not for hunts")
    if args.out:
        checked_out(args.results if hunts else [], args.out)
    if args.out:
        checked_output(args.out, "--out", parent_must_exist=False, directory=True)
    if hunts:
        return hunt_report_main(args.results, args.out, hunts)
    if args.reference:
        check_input(args.reference, "--reference")
        if not args.reference.is_file():
            raise UsageError(f"--reference {args.reference}: no such results file")
    return report_main(args.results[0], args.out, args.reference)


def checked_report_inputs(paths: list[Path]) -> list:
    """The hunts read, for hunt directories; [] for one results file (or directory);
    UsageError for a mix, a directory that is not a hunt among hunts, or several results."""
    from plugpull.report.hunts import is_hunt, read_hunt
    for path in paths:
        check_input(path, "", directory_ok=True)
    if not any(is_hunt(p) for p in paths):
        if len(paths) > 1:
            raise UsageError(f"{paths[1]}: one results file at a time (several inputs are for hunt directories)")
        return []
    for path in paths:
        if not path.is_dir():
            raise UsageError(f"{path}: a results file among hunt directories: report them apart")
    if len({p.resolve() for p in paths}) < len(paths):
        raise UsageError("a hunt directory is given twice")
    return [read_hunt(path) for path in paths]
