"""The `plugpull` command. Exit codes: 0 done, 1 a check found a problem, 2 bad input or a
missing tool (nothing was changed), 3 the harness failed (QEMU died, the guest hung)."""

import argparse
import signal
import sys

from plugpull import __version__
from plugpull.cli import crash, guests, matrix
from plugpull.cli.common import EXIT_INFRA, EXIT_USAGE
from plugpull.errors import InfraError, ToolMissing, UsageError
from plugpull.log import setup_logging


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="plugpull", description=__doc__.split("\n")[0])
    p.add_argument("--version", action="version", version=f"plugpull {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for commands in (guests, crash, matrix):
        commands.add_parsers(sub)
    return p


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    setup_logging(args)
    for signum in (signal.SIGTERM, signal.SIGHUP):  # a lost terminal cleans up as a kill does
        signal.signal(signum, _terminate)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `plugpull report ... | head` ends quietly
    try:
        return args.func(args)
    except (UsageError, ToolMissing) as e:
        print(f"plugpull: {e}", file=sys.stderr)
        return EXIT_USAGE
    except InfraError as e:
        print(f"plugpull: harness failure (not a filesystem verdict): {e}", file=sys.stderr)
        return EXIT_INFRA
    except KeyboardInterrupt:
        print("plugpull: interrupted", file=sys.stderr)
        return 130
