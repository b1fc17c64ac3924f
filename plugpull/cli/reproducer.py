"""`plugpull reproducer (gen:ID | STATE_DIR) --fs FS`: a generated workload's finding as a
script a maintainer runs without plugpull (fstests' dm-flakey method), or as an fstests test;
with --run, the script run in a plugpull guest."""

import sys
from pathlib import Path

from plugpull.cli.common import EXIT_FOUND, EXIT_OK, add_guest_options, guest_backend, kernel_source, \
    whole_option
from plugpull.errors import UsageError
from plugpull.files import OutputPath, a_state_dir, an_output, atomic_write, check_output
from plugpull.values import COUNT_MAX, shown

STYLES = ("sh", "fstests")


def add_parsers(sub) -> None:
    from plugpull.reproducer import FILESYSTEMS
    r = sub.add_parser("reproducer", help="a finding as a dm-flakey script or fstests test, runnable without plugpull")
    r.add_argument("target", type=a_target, metavar="gen:ID|STATE_DIR",
                   help="a generated workload, or a saved crash state of one")
    r.add_argument("--fs", choices=FILESYSTEMS, help="the filesystem (default: a state's own; needed with gen:ID)")
    r.add_argument("--style", choices=STYLES, default="sh", help="sh: a POSIX sh script taking the scratch device "
                   "(default); fstests: a test for tests/generic/ and its golden .out")
    r.add_argument("--out", type=an_output, metavar="FILE", help="write FILE (with --style fstests, FILE.out too) "
                   "instead of printing")
    r.add_argument("--point", type=whole_option(0, COUNT_MAX), metavar="K",
                   help="drop writes after persistence point K (default: the last; a state's own ack)")
    r.add_argument("--run", action="store_true", help="run the sh script in a plugpull guest and report its verdict")
    add_guest_options(r)
    r.set_defaults(func=cmd_reproducer, derived_paths=golden_output)


def a_target(text: str):
    """gen:ID as it is, else a saved state's directory (an input, with the files read in it)."""
    from plugpull.generate.workload import PREFIX
    return text if text.startswith(PREFIX) else a_state_dir(text)


a_target.any_text = True


def golden_output(args) -> list:
    """--style fstests writes FILE.out beside FILE: an output as well."""
    if args.out is None or args.style != "fstests":
        return []
    return [("--out", OutputPath(f"{args.out}.out"))]


def _case(args):
    from plugpull.reproducer import FILESYSTEMS, case_for, state_target
    if isinstance(args.target, str):
        if args.fs is None:
            raise UsageError(f"--fs is needed with gen:ID ({', '.join(FILESYSTEMS[:-1])} or {FILESYSTEMS[-1]})")
        return case_for(args.target, args.fs, args.point)
    where = Path(args.target)
    if not where.is_dir():
        raise UsageError(f"{args.target}: neither gen:ID nor a saved state directory")
    workload, fs, point = state_target(where)
    if args.fs is None and fs not in FILESYSTEMS:
        raise UsageError(f"{where / 'state.json'}: its fs is {shown(fs)}, not one the reproducer makes "
                         f"({', '.join(FILESYSTEMS)}): give --fs")
    last = case_for(workload, args.fs or fs).point
    if args.point is None and point > last:
        raise UsageError(f"{where / 'state.json'}: acks_required is {point + 1}, more than {workload} has "
                         f"(its setup and {last} persistence points): give --point")
    return case_for(workload, args.fs or fs, point if args.point is None else args.point)


def _check_options(args) -> None:
    if args.run and args.style != "sh":
        raise UsageError("--run runs the sh style; drop --style fstests")
    if not args.run and (args.kernel or args.modules):
        raise UsageError("--kernel and --modules go with --run")
    if args.out is not None:
        check_output(args.out, "--out")
        if args.style == "fstests":
            check_output(Path(f"{args.out}.out"), "--out")


def _write(args, case) -> None:
    if args.style == "fstests":
        from plugpull.reproducer.fstests import golden, test
        number = args.out.name if args.out is not None else "NNN"
        files = [(args.out, test(case, number), 0o755), (Path(f"{args.out}.out"), golden(case, number), 0o644)]
    else:
        from plugpull.reproducer.sh import script
        files = [(args.out, script(case), 0o755)]
    if args.out is None:
        print(files[0][1], end="")
        return
    for path, text, mode in files:
        atomic_write(path, text, mode)
        print(f"wrote {path}", file=sys.stderr)


def cmd_reproducer(args) -> int:
    _check_options(args)
    case = _case(args)
    if not args.run:
        _write(args, case)
        return EXIT_OK
    kernel, backend = kernel_source(args), guest_backend(args)  # refused before --out is written
    if args.out is not None:
        _write(args, case)
    from plugpull.guest.rig import prepare_rig
    from plugpull.reproducer.run import run_in_guest
    from plugpull.reproducer.sh import script
    rig = prepare_rig(args.accel, kernel, backend)
    print(f"running the reproducer of {case.title()} in a guest ...", file=sys.stderr)
    outcome = run_in_guest(rig, script(case))
    for line in outcome.lines:
        print(line)
    return EXIT_OK if outcome.passed else EXIT_FOUND
