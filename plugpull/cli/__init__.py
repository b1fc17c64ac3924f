"""The `plugpull` command. Exit codes: 0 done, 1 a check found a problem, 2 bad input or a
missing tool (nothing was changed), 3 the harness failed (QEMU died, a tool failed). A failure
of the guest kernel under test is a verdict, never exit code 3."""

import argparse
import errno
import io
import os
import select
import signal
import sys
import traceback
from pathlib import Path

from plugpull import __version__
from plugpull.cli import (bisect, cluster, crash, faults, generate, guests, hunt, kernels, matrix, minimise, report,
                          reproduce, reproducer)
from plugpull.cli.common import EXIT_INFRA, EXIT_OK, EXIT_USAGE, describe, no_blank_edges
from plugpull.errors import InfraError, PlugpullError, ToolMissing, UsageError
from plugpull.files import InputPath, OutputPath, refuse_overlaps
from plugpull.log import discard_log_files, setup_logging
from plugpull.paths import check_cache_dir


class _Parser(argparse.ArgumentParser):
    """Bad options are said in one line, as every other bad input is."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="plugpull", description=" ".join(__doc__.split()))
    p.add_argument("--version", action="version", version=f"plugpull {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for commands in (guests, crash, matrix, reproduce, report, minimise, faults, generate, hunt, kernels, bisect, cluster,
                     reproducer):
        commands.add_parsers(sub)
    for command in sub.choices.values():
        for action in command._actions:
            if action.nargs != 0 and not isinstance(action, argparse._HelpAction):
                action.type = no_blank_edges(action.type)
    return p


SINGLE = (argparse._StoreAction, argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction)


def refuse_repeats(p: argparse.ArgumentParser, args, argv: list[str]) -> None:
    """An option that takes one value, given twice, is refused: argparse would keep the last
    one silently (`scheduler --port 0 --port 1`)."""
    command = _command_parser(p, args)
    words = argv[argv.index(args.command) + 1:] if args.command in argv else argv
    words = words[:words.index("--")] if "--" in words else words
    for action in command._actions:
        if not isinstance(action, SINGLE) or not action.option_strings:
            continue
        given = [w for w in words if w.split("=", 1)[0] in action.option_strings]
        if len(given) > 1:
            raise UsageError(f"{action.option_strings[-1]} is given twice: give it once")


def _command_parser(p: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    subparsers = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[args.command]


def given_paths(p: argparse.ArgumentParser, args) -> list[tuple[str, Path]]:
    """Every path the command line gave (files.InputPath or OutputPath, or the paths an
    option's `type.paths` finds in a value that is not always one, as --kernel's), with the
    option or the argument's name that gave it, in the command's order; then the outputs the
    command derives from them (`args.derived_paths`, as reproducer's FILE.out)."""
    command = _command_parser(p, args)
    named = []
    for action in command._actions:
        values = getattr(args, action.dest, None)
        paths_in = getattr(action.type, "paths", lambda value: [value])
        for value in values if isinstance(values, list) else [values]:
            for path in paths_in(value) if value is not None else ():
                if isinstance(path, (InputPath, OutputPath)):
                    named.append(((action.option_strings or [action.metavar or action.dest.upper()])[-1], path))
    return named + getattr(args, "derived_paths", lambda args: [])(args)


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


class _ClosedStdout(io.TextIOBase):
    """sys.stdout when plugpull starts with its stdout closed (`>&-`). Python leaves it None
    and print() then writes nothing, so a listing would end 0 having shown nothing; here a
    write fails instead, and the command ends with exit 3 and says why."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "stdout is closed: nothing can be printed")


def _guard_stdout() -> None:
    """With fd 1 closed, /dev/null takes it (so that no file plugpull opens becomes a child's
    stdout) and print() fails (`_ClosedStdout`)."""
    if sys.stdout is None:
        os.open(os.devnull, os.O_WRONLY)  # the lowest free descriptor: 1
        sys.stdout = _ClosedStdout()


def main(argv=None) -> int:
    _guard_stdout()
    p = parser()
    args = p.parse_args(argv)
    for signum in (signal.SIGTERM, signal.SIGHUP):  # a lost terminal cleans up as a kill does
        signal.signal(signum, _terminate)
    try:
        refuse_repeats(p, args, list(sys.argv[1:] if argv is None else argv))
        refuse_overlaps(given_paths(p, args))
        check_cache_dir()
        setup_logging(args)
        return args.func(args)
    except (UsageError, ToolMissing) as e:
        discard_log_files()
        print(f"plugpull: {e}", file=sys.stderr)
        return EXIT_USAGE
    except InfraError as e:
        print(f"plugpull: harness failure (not a filesystem verdict): {e}", file=sys.stderr)
        return EXIT_INFRA
    except PlugpullError as e:
        print(f"plugpull: {e}", file=sys.stderr)
        return EXIT_INFRA
    except KeyboardInterrupt:
        print("plugpull: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError as e:
        return EXIT_OK if _stdout_gone() else _unexpected(e, args)
    except Exception as e:
        return _unexpected(e, args)


def _stdout_gone() -> bool:
    """Whether the reader of stdout went away (`plugpull generate --list | head`): then plugpull
    ends quietly. SIGPIPE stays ignored: with its default action, a write to the socket of a
    QEMU that had just been stopped (Ctrl-C) killed plugpull before it could clean up."""
    poller = select.poll()
    poller.register(sys.stdout.fileno(), select.POLLOUT)
    if not any(events & select.POLLERR for _, events in poller.poll(0)):
        return False
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
    return True


def _unexpected(error: Exception, args) -> int:
    """An error plugpull did not expect is the harness's: one line (with -v, the traceback)."""
    if getattr(args, "verbose", 0):
        traceback.print_exc()
    print(f"plugpull: harness failure (not a filesystem verdict): {describe(error)}", file=sys.stderr)
    return EXIT_INFRA
