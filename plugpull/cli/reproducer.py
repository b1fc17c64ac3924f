"""`plugpull reproducer (gen:ID | STATE_DIR | CASE.toml) [--fs FS]`: a finding as a script a
maintainer runs without plugpull, or as an fstests test, in the form that shows it every time
(plugpull/reproducer/forms.py: dm-flakey, dm-delay above dm-flakey, the flush count, the
crafted XFS log); with --run, the script run in a plugpull guest."""

import argparse
import stat
import sys
from pathlib import Path

from plugpull.cli.common import EXIT_FOUND, EXIT_OK, add_guest_options, guest_backend, kernel_source, \
    whole_option
from plugpull.errors import UsageError
from plugpull.files import OutputPath, a_case_file, a_state_dir, an_output, atomic_write, check_output
from plugpull.values import COUNT_MAX, shown

STYLES = ("sh", "fstests")


def add_parsers(sub) -> None:
    from plugpull.reproducer import FILESYSTEMS
    from plugpull.reproducer.forms import FORMS
    r = sub.add_parser("reproducer", help="a finding as a script or fstests test that shows it every time, "
                                          "runnable without plugpull")
    r.add_argument("target", type=a_target, metavar="gen:ID|STATE_DIR|CASE", help="a generated workload, a saved "
                   "crash state of one, or a case file replaying XFS's unmountable log state")
    r.add_argument("--fs", type=a_reproducer_fs, metavar="FS", help=f"the filesystem: {', '.join(FILESYSTEMS)}, or a "
                   "profile of one (FS+OPTION, e.g. ext4+fast_commit) (default: a state's own; needed with gen:ID)")
    r.add_argument("--form", choices=("auto", *FORMS), default="auto", help="auto (default): from what the finding "
                   "is; flakey: dm-flakey's drop; delay: dm-delay above dm-flakey; flushes: the device's flush count "
                   "(fstests: dm-log-writes); log-hole: the crafted XFS log")
    r.add_argument("--style", choices=STYLES, default="sh", help="sh: a POSIX sh script taking the scratch device "
                   "(default); fstests: a test for tests/generic/ (tests/xfs/ for log-hole) and its golden .out")
    r.add_argument("--out", type=an_output, metavar="FILE", help="write FILE instead of printing (with --style "
                   "fstests: DIR/NNN, a test number, and NNN.out beside it)")
    r.add_argument("--point", type=whole_option(0, COUNT_MAX), metavar="K",
                   help="drop writes after persistence point K (default: the last; a state's own ack)")
    r.add_argument("--run", action="store_true", help="run the sh script in a plugpull guest and report its verdict")
    add_guest_options(r)
    r.set_defaults(func=cmd_reproducer, derived_paths=golden_output)


def a_reproducer_fs(text: str) -> str:
    """An argparse `type`: a filesystem the reproducer makes, or a profile of one."""
    from plugpull.reproducer import checked_fs
    try:
        return checked_fs(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def a_target(text: str):
    """gen:ID as it is; a case file (CASE.toml) an input; else a saved state's directory (an
    input, with the files read in it)."""
    from plugpull.generate.workload import PREFIX
    if text.startswith(PREFIX):
        return text
    return a_case_file(text) if text.endswith(".toml") else a_state_dir(text)


a_target.any_text = True


def golden_output(args) -> list:
    """--style fstests writes FILE.out beside FILE: an output as well."""
    if args.out is None or args.style != "fstests":
        return []
    return [("--out", OutputPath(f"{args.out}.out"))]


def _gen_target(args):
    from plugpull.reproducer import FILESYSTEMS, case_for
    from plugpull.reproducer.forms import gen_choice
    if args.fs is None:
        raise UsageError(f"--fs is needed with gen:ID ({', '.join(FILESYSTEMS[:-1])} or {FILESYSTEMS[-1]}, or a "
                         "profile of one: FS+OPTION)")
    return case_for(args.target, args.fs, args.point), gen_choice()


def _state_target(where: Path, args):
    from plugpull.reproducer import FILESYSTEMS, case_for, makes, state_target
    from plugpull.crash.saved import state_file
    from plugpull.reproducer.forms import state_choice
    workload, fs, point = state_target(where)
    if args.fs is None and not makes(fs):
        raise UsageError(f"{state_file(where)}: its fs is {shown(fs)}, not one the reproducer makes "
                         f"({', '.join(FILESYSTEMS)}, or a profile of one): give --fs")
    last = case_for(workload, args.fs or fs).point
    if args.point is None and point > last:
        raise UsageError(f"{state_file(where)}: acks_required is {point + 1}, more than {workload} has "
                         f"(its setup and {last} persistence points): give --point")
    case = case_for(workload, args.fs or fs, point if args.point is None else args.point)
    return case, state_choice(where, case.point) if args.form == "auto" else None


def _kind(where: Path) -> str | None:
    """"file", "dir", or None (missing or another kind); a name the system refuses to look up
    (one longer than a name may be) is bad input, not a harness failure."""
    try:
        mode = where.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise UsageError(f"{where}: {e.strerror}") from None
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else None


def _target(args):
    from plugpull.reproducer.forms import Target, case_choice
    where = Path(args.target)
    if isinstance(args.target, str):
        case, choice = _gen_target(args)
    elif _kind(where) == "file" and where.suffix == ".toml":
        given = [flag for flag, value in (("--fs", args.fs), ("--point", args.point)) if value is not None]
        if given:  # refused, not ignored: the case file says which state and filesystem it replays
            raise UsageError(f"{given[0]} does not go with a case file ({args.target}): it replays its own kept "
                             "state, on its own filesystem")
        case, choice = None, case_choice(where)
    elif _kind(where) == "dir":
        case, choice = _state_target(where, args)
    else:
        raise UsageError(f"{args.target}: neither gen:ID, a saved state directory nor a case file")
    form, why = (choice.form, choice.why) if args.form == "auto" else (args.form, "asked for (--form)")
    return _checked(Target(case, form, why), args)


def _checked(t, args):
    from plugpull.reproducer.forms import Target
    if t.form == "log-hole":
        if t.case is not None and t.case.fs != "xfs":
            raise UsageError(f"--form log-hole is XFS's finding: not for {t.case.fs}")
        return Target(None, t.form, t.why)
    if t.case is None:
        raise UsageError(f"--form {t.form}: {args.target} has no generated workload to run")
    if t.form == "flushes" and t.case.point == 0:
        raise UsageError("--form flushes needs a persistence point after the setup (--point 1 or more)")
    return t


def _check_options(args) -> None:
    if args.run and args.style != "sh":
        raise UsageError("--run runs the sh style; drop --style fstests")
    if not args.run and (args.kernel or args.modules):
        raise UsageError("--kernel and --modules go with --run")
    if args.out is not None:
        check_output(args.out, "--out")
        if args.style == "fstests":
            from plugpull.reproducer.shell import test_number
            test_number(args.out.name)
            check_output(Path(f"{args.out}.out"), "--out")


def _write(args, t) -> None:
    from plugpull.reproducer.forms import texts
    number = args.out.name if args.out is not None and args.style == "fstests" else "NNN"
    text, golden = texts(t, args.style, number)
    if args.out is None:
        print(text, end="")
        return
    files = [(args.out, text, 0o755)] + ([(Path(f"{args.out}.out"), golden, 0o644)] if golden is not None else [])
    for path, body, mode in files:
        atomic_write(path, body, mode)
        print(f"wrote {path}", file=sys.stderr)


def cmd_reproducer(args) -> int:
    _check_options(args)
    t = _target(args)
    if args.run:
        # refused before anything is said or written, a profile the kernel lacks too
        kernel = kernel_source(args, [t.case.fs] if t.case is not None else ())
        backend = guest_backend(args)
    print(f"form: {t.form} ({t.why})", file=sys.stderr)
    if not args.run:
        _write(args, t)
        return EXIT_OK
    if args.out is not None:
        _write(args, t)
    from plugpull.guest.rig import prepare_rig
    from plugpull.reproducer.forms import texts
    from plugpull.reproducer.inguest import run_in_guest
    rig = prepare_rig(args.accel, kernel, backend)
    what = t.case.title() if t.case is not None else "the XFS log hole"
    print(f"running the reproducer of {what} in a guest ...", file=sys.stderr)
    outcome = run_in_guest(rig, texts(t, "sh")[0])
    for line in outcome.lines:
        print(line)
    return EXIT_OK if outcome.passed else EXIT_FOUND
