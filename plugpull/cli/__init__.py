"""The `plugpull` command. Exit codes: 0 done, 1 a check found a problem, 2 bad input or a
missing tool (nothing was changed), 3 the harness failed (QEMU died, a tool failed). A failure
of the guest kernel under test is a verdict, never exit code 3."""

import errno
import io
import os
import select
import signal
import sys
import traceback

from plugpull import __version__
from plugpull.cli import (bisect, cluster, crash, faults, generate, guests, hunt, kernels, matrix, minimise, report,
                          reproduce, reproducer)
from plugpull.cli.common import EXIT_INFRA, EXIT_OK, EXIT_USAGE
from plugpull.cli.parser import Parser, given_paths, refuse_repeated_options
from plugpull.errors import InfraError, PlugpullError, ToolMissing, UsageError, describe
from plugpull.files import refuse_overlaps
from plugpull.log import discard_log_files, setup_logging
from plugpull.paths import check_cache_dir
from plugpull.values import one_line


def parser() -> Parser:
    p = Parser(prog="plugpull", description=" ".join(__doc__.split()))
    p.add_argument("--version", action="version", version=f"plugpull {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for commands in (guests, crash, matrix, reproduce, report, minimise, faults, generate, hunt, kernels, bisect, cluster,
                     reproducer):
        commands.add_parsers(sub)
    return p


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
        refuse_repeated_options(p, args)
        refuse_overlaps(given_paths(p, args))
        check_cache_dir()
        setup_logging(args)
        return args.func(args)
    except (UsageError, ToolMissing) as e:
        discard_log_files()
        print(f"plugpull: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except InfraError as e:
        print(f"plugpull: harness failure (not a filesystem verdict): {one_line(e)}", file=sys.stderr)
        return EXIT_INFRA
    except PlugpullError as e:
        print(f"plugpull: {one_line(e)}", file=sys.stderr)
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
    print(f"plugpull: harness failure (not a filesystem verdict): {one_line(describe(error))}", file=sys.stderr)
    return EXIT_INFRA
