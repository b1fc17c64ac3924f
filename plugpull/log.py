"""Logging: the console shows the step lines users read, `-v` adds detail, and each run keeps
its whole DEBUG log in a file beside its results.

Every module logs through its own logger, under the `plugpull` one:

    log = logging.getLogger(__name__)
    log.info("recording fsync-files on xfs ...")   # a step line: on stderr, as plain text
    log.debug("checker booted in 3.1 s under tcg")  # with -vv, and always in the run's log file
"""

import errno
import logging
import shlex
import sys
from contextlib import contextmanager
from pathlib import Path

from plugpull import __version__
from plugpull.errors import ToolMissing, UsageError
from plugpull.files import an_output, check_output

ROOT = "plugpull"
DETAILED = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
IN_FILES = "%(asctime)s %(levelname)-7s %(threadName)s %(name)s: %(message)s"

_installed: list[logging.Handler] = []


class _Stderr(logging.StreamHandler):
    """Writes to `sys.stderr` as it is when a record comes, so that a progress bar that
    redirects stderr while it is drawn, or a test that captures it, gets the line."""

    def __init__(self, level: int):
        logging.Handler.__init__(self, level)

    @property
    def stream(self):
        return sys.stderr


def add_log_options(parser) -> None:
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more on stderr: -v adds times, levels and sources; -vv debug messages")
    parser.add_argument("--log-file", type=an_output, metavar="PATH",
                        help="also append the debug log (every guest boot and command) to PATH")


class _LogFile(logging.FileHandler):
    """A log file that a full disk silences instead of printing a traceback per line: the
    run stops on its own `DiskFull`, in one line. It is opened (and its directories made) at
    its first line; `discard` removes what opening it created."""

    def __init__(self, path: Path):
        self.made: list[Path] = []
        super().__init__(path, encoding="utf-8", delay=True)

    def _open(self):
        path = Path(self.baseFilename)
        for directory in reversed(path.parents):
            if not directory.exists():
                directory.mkdir()
                self.made.append(directory)
        if not path.exists():
            self.made.append(path)
        return super()._open()

    def alone(self, besides: tuple[str, ...] = ()) -> bool:
        """Whether this handler made its file, and its directory holds nothing else (but the
        names `besides`, which their owner removes)."""
        path = Path(self.baseFilename)
        return path in self.made and {p.name for p in path.parent.iterdir()} - set(besides) == {path.name}

    def discard(self) -> None:
        """Close, and remove the file and directories this handler created (a refused command
        leaves nothing behind)."""
        self.close()
        for path in reversed(self.made):
            try:
                path.rmdir() if path.is_dir() else path.unlink()
            except OSError:
                break
        self.made.clear()

    def handleError(self, record) -> None:
        error = sys.exc_info()[1]
        if not (isinstance(error, OSError) and error.errno == errno.ENOSPC):
            super().handleError(record)

    def close(self) -> None:
        try:
            super().close()
        except OSError as e:  # the last lines, buffered, find the disk still full
            if e.errno != errno.ENOSPC:
                raise


def _file_handler(path: Path) -> logging.Handler:
    handler = _LogFile(path)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter(IN_FILES))
    return handler


def setup_logging(args) -> None:
    """The console handler `args.verbose` asks for, and the `--log-file` (checked: a
    UsageError if it cannot be written); called again, it replaces what it installed before."""
    logger = logging.getLogger(ROOT)
    for handler in _installed:
        logger.removeHandler(handler)
        handler.close()
    _installed.clear()
    verbose = getattr(args, "verbose", 0) or 0
    console = _Stderr(logging.DEBUG if verbose >= 2 else logging.INFO)
    console.setFormatter(logging.Formatter(DETAILED if verbose else "%(message)s", "%H:%M:%S"))
    _installed.append(console)
    if getattr(args, "log_file", None):
        check_output(args.log_file, "--log-file", parents=True)
        _installed.append(_file_handler(args.log_file))
    for handler in _installed:
        logger.addHandler(handler)
    logger.setLevel(min(handler.level for handler in _installed))


def discard_log_files() -> None:
    """After a refused command: the --log-file goes again if this command created it."""
    for handler in _installed:
        if isinstance(handler, _LogFile):
            handler.discard()


@contextmanager
def run_log(path: Path, besides: tuple[str, ...] = ()):
    """For the duration of a run, also its whole DEBUG log in `path` (appended: a resumed run
    adds to it). An exception that ends the run is logged there with its traceback; a refusal
    (exit 2) removes the log, and the directories made for it, when it is all there is (but
    the names `besides`, which the caller removes)."""
    logger = logging.getLogger(ROOT)
    handler = _file_handler(path)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.debug("plugpull %s started: %s", __version__, shlex.join(sys.argv))
    try:
        yield path
    except BaseException as e:
        logger.debug("the run ended with %s: %s", type(e).__name__, e, exc_info=isinstance(e, Exception))
        if isinstance(e, (UsageError, ToolMissing)) and handler.alone(besides):
            handler.discard()  # a refused run leaves nothing behind, not even an empty results/
        raise
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(level)
