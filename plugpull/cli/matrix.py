"""`plugpull matrix`: both measurements per cell, appended to a results file, then the table
and the report. `reproduce` (cli/reproduce) runs its cells the same way, on each kernel."""

import sys
from pathlib import Path

from plugpull.cli.cluster import add_cluster_option, cluster_judging
from plugpull.cli.common import (EXIT_INFRA, EXIT_OK, add_guest_options, checked_output, guest_backend, kernel_list,
                                 parse_params)
from plugpull.cli.crash import add_hosts_option, checker_hosts
from plugpull.errors import UsageError
from plugpull.files import an_output
from plugpull.log import run_log
from plugpull.runs.settings import add_options


def add_parsers(sub) -> None:
    mx = sub.add_parser("matrix", help="filesystem x mode x workload: throughput and crash safety per cell")
    add_guest_options(mx)
    add_options(mx, "matrix")
    mx.add_argument("--real-disk", metavar="DEV",
                    help="run the throughput side on this block device, passed through (it is erased); "
                         "crash states stay modelled on the emulated disk")
    mx.add_argument("--erase-real-disk", action="store_true", help="consent to erasing --real-disk")
    mx.add_argument("--no-throughput", action="store_true")
    mx.add_argument("--no-crash", action="store_true")
    mx.add_argument("--overhead", action="store_true", help="also time the workload under the recorder")
    mx.add_argument("--results", type=an_output, default="results/matrix.jsonl",
                    help="JSON lines, appended; cells already there are skipped")
    mx.add_argument("--report", type=an_output, help="report directory (default: beside the results)")
    add_hosts_option(mx)
    add_cluster_option(mx)
    mx.set_defaults(func=cmd_matrix)


def finish_matrix(ran: list, results: Path, report_dir: Path | None, faults: list = (),
                  reference: Path | None = None) -> None:
    from plugpull.report import render_table, report
    from plugpull.results import read_cells

    paths = report(results, report_dir or results.parent / f"{results.stem}-report")
    cells = read_cells(results)[0]
    if cells or not faults:
        print(render_table(cells, read_cells(reference)[0] if reference else None))
    if faults:
        from plugpull.cli.faults import print_faults
        print_faults(faults)
    print(f"results: {results}")
    print(f"report:  {paths['html']}")
    errors = [r for r in ran if r.error]
    if errors:
        print(f"{len(errors)} cells failed in the harness (not verdicts); rerun to retry them", file=sys.stderr)


def checked_real_disk(device: str, erase: bool) -> str:
    """A block device the user let plugpull erase, and that nothing mounts or holds."""
    import stat

    from plugpull.guest.blockdev import in_use

    path = Path(device)
    try:
        mode = path.stat().st_mode
        if not stat.S_ISBLK(mode):
            raise UsageError(f"--real-disk {device}: not a block device")
        busy = in_use(path)
    except OSError as e:
        raise UsageError(f"--real-disk {device}: {e.strerror}") from None
    if busy:
        raise UsageError(f"--real-disk {device}: in use ({busy})")
    if not erase:
        raise UsageError(f"--real-disk {device} is reformatted for every throughput run: "
                         "add --erase-real-disk to say that is fine")
    return str(path)


def matrix_params(items: list[str], workloads) -> dict:
    """--param WORKLOAD.NAME=VALUE -> {workload: {name: value}}, for workloads the matrix runs."""
    params: dict = {}
    for name, value in parse_params(items):
        wl, dot, key = name.partition(".")
        if not dot or not key:
            raise UsageError(f"bad --param {name}: expected WORKLOAD.NAME=VALUE, e.g. tree-extract.files=2000")
        if wl not in workloads:
            raise UsageError(f"bad --param {name}: {wl!r} is not one of the --workload list ({', '.join(workloads)})")
        params.setdefault(wl, {})[key] = value
    return params


def cmd_matrix(args) -> int:
    from plugpull.crash.spec import CrashSpec
    from plugpull.runs.matrix import cells, for_kernel, run_matrix, run_on_kernels, with_user_scripts
    from plugpull.runs.settings import settings_of

    if args.no_throughput and args.no_crash:
        raise UsageError("--no-throughput and --no-crash leave nothing to measure: drop one")
    if args.erase_real_disk and not args.real_disk:
        raise UsageError("--erase-real-disk consents to erasing --real-disk, and no --real-disk is given")
    if args.real_disk and args.no_throughput:
        raise UsageError("--real-disk runs the throughput side, and --no-throughput drops it")
    judging = cluster_judging(args, reach=False)
    if judging and args.no_crash:
        raise UsageError("--cluster checks the crash states, and --no-crash drops them")
    params = matrix_params(args.param, args.workload)
    checked_output(args.results, "--results", parent_must_exist=False)
    if args.report:
        checked_output(args.report, "--report", parent_must_exist=False, directory=True)
    real_disk = checked_real_disk(args.real_disk, args.erase_real_disk) if args.real_disk else None
    per_cell = ("fs", "mode", "workload", "profile")
    base = CrashSpec(**{s.key: getattr(args, s.key) for s in settings_of("matrix") if s.key not in per_cell})
    todo = cells(base, args.fs, args.mode, args.workload, params, throughput=not args.no_throughput,
                 crash=not args.no_crash, overhead=args.overhead, profile=args.profile, real_disk=real_disk)
    todo = with_user_scripts(todo, Path("."))
    for cell in todo:
        cell.validate()
    kernels = kernel_list(args, args.fs)
    if judging:
        judging.reach()
    backend, hosts = guest_backend(args), checker_hosts(args.hosts)
    with run_log(args.results.with_suffix(".log")):
        ran = run_on_kernels(kernels, args.accel, backend, hosts, lambda rig, name, tag, work: run_matrix(
            for_kernel(todo, tag), args.results, rig, work, judging=judging))
    finish_matrix(ran, args.results, args.report)
    return EXIT_INFRA if any(r.error for r in ran) else EXIT_OK
