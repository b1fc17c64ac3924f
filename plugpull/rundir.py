"""A run's directory (a hunt's, a bisect's): its settings, what it may hold, and its journal of
JSON lines, one reader and one writer for both.

    RunDir(...).check_out(out, settings)   `out` a new name, an empty directory, or this run's
                                           (the same settings): else a one-line UsageError
    RunDir(...).read_settings(out)         its settings (a JSON object), or None before it began
    parsed(path, usable)                   each journal line's bytes, and the line if usable
    append(path, docs)                     lines appended whole and synced
    set_aside(path, rejected, usable)      the lines no reader can use moved out, bytes as they were

A line no reader can use (torn by a stop, garbled, nested too deep to parse, of the wrong
types, a name with a NUL or too long) is left out by every reader and counted, never an
error: the run that holds the directory sets such lines aside and goes on. Files are read
without waiting (a FIFO is refused, not opened for ever: `files.open_regular`) and within a
bound, and never written through a link.
"""

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from plugpull.errors import UsageError
from plugpull.files import atomic_write, atomic_write_json, open_regular
from plugpull.paths import WORK_PREFIX

SETTINGS_MAX = 1 << 20  # a run's settings are a few hundred bytes
NAME_MAX = 255  # a name the journal gives a directory or file (an id, a part of a path), in bytes


@dataclass(frozen=True)
class RunDir:
    """A kind of run directory. `what`: what runs there, as refusals name it ("hunt");
    `settings`: its settings file; `own_files` and `own_dirs`: what it keeps there (a link or
    another kind of file at one of those names is refused: it would write elsewhere);
    `scratch`: what a directory may hold before its run began (its log, its lock)."""

    what: str
    settings: str
    own_files: tuple
    own_dirs: tuple = ()
    scratch: tuple = ()

    def check_out(self, out: Path, settings: dict | None = None, unknown: tuple = (), legacy: dict | None = None):
        """UsageError unless `out` is a new name, an empty directory, or a run of this kind (of
        these settings, if given; the `unknown` ones left out, and `legacy` what settings from
        before a key was added had)."""
        out = Path(out)
        if out.is_symlink() or (out.exists() and not out.is_dir()):
            raise UsageError(f"{out}: not a directory: --out takes a new name or a {self.what}'s directory")
        self._refuse_foreign_kinds(out)
        if not out.exists() or all(p.name in self.scratch or p.name.startswith(WORK_PREFIX) for p in out.iterdir()):
            return
        held = self.read_settings(out)
        if held is None:
            raise UsageError(f"{out}: not a {self.what}'s directory (no {self.settings}): give a new name")
        if settings is None:
            return
        held, settings = {**(legacy or {}), **held}, {**(legacy or {}), **settings}
        differ = sorted(k for k in {*held, *settings} if held.get(k) != settings.get(k) and k not in unknown)
        if differ:
            shown = ", ".join(f"{k} {held.get(k)!r} there, {settings.get(k)!r} here" for k in differ[:3])
            raise UsageError(f"{out} holds a {self.what} of other settings ({shown}): give a new --out")

    def read_settings(self, out: Path) -> dict | None:
        """The settings in `out`, None if there are none; a UsageError if they are not a
        regular file, not within the bound, or not a JSON object."""
        path = Path(out) / self.settings
        try:
            with open_regular(path, "") as f:
                data = f.read(SETTINGS_MAX + 1)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise UsageError(f"{path}: unreadable ({e.strerror})") from None
        if len(data) > SETTINGS_MAX:
            raise UsageError(f"{path}: over {SETTINGS_MAX} bytes, not a {self.what}'s settings: give a new --out")
        held = loaded(data)
        if held is None and data.strip() != b"null":
            raise UsageError(f"{path}: unreadable (not JSON): give a new --out")
        if not isinstance(held, dict):
            raise UsageError(f"{path}: not a {self.what}'s settings (a JSON object): give a new --out")
        return held

    def begin(self, out: Path, settings: dict) -> None:
        """`out` made this kind's directory: its settings written, if they are not there yet."""
        Path(out).mkdir(parents=True, exist_ok=True)
        if not (Path(out) / self.settings).is_file():
            atomic_write_json(Path(out) / self.settings, settings)

    def _refuse_foreign_kinds(self, out: Path) -> None:
        for name in (*self.own_files, *self.own_dirs):
            try:
                mode = os.lstat(out / name).st_mode
            except OSError:
                continue
            wanted = stat.S_ISDIR if name in self.own_dirs else stat.S_ISREG
            if not wanted(mode):
                raise UsageError(f"{out / name}: {_kind(mode)}, where the {self.what} keeps its own {name}: "
                                 "give a new --out")


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))
    return next((said for test, said in kinds if test(mode)), "a regular file")


def loaded(data: bytes):
    """The JSON value of `data`, None if it is not JSON (nested too deep to parse too)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def a_name(text) -> bool:
    """A string the journal may name a file or directory by: no NUL, and not too long."""
    return isinstance(text, str) and "\0" not in text and 0 < len(text.encode("utf-8", "replace")) <= NAME_MAX


def read_journal(path: Path) -> bytes | None:
    """The journal's bytes (a FIFO said, not waited on), None if there is none."""
    try:
        with open_regular(path, "") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None


def parsed(data: bytes | None, usable: Callable[[object], bool]) -> list[tuple[bytes, dict | None]]:
    """Each line's bytes, and the line parsed if `usable` takes it, else None (blank lines
    dropped). `usable` failing on a line it was not written for leaves that line out too."""
    if not data:
        return []
    raws = data.split(b"\n")
    if not raws[-1]:
        raws.pop()
    return [(raw, _kept(loaded(raw), usable)) for raw in raws if raw.strip()]


def _kept(line, usable):
    try:
        return line if usable(line) else None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def append(path: Path, docs: list[dict]) -> None:
    """`docs` appended to the journal at `path` as lines, whole (after a torn last line, a new
    line first), synced before it returns; never through a link."""
    if not docs:
        return
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "ab") as f:
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        f.write((b"\n" if torn else b"") + b"".join(json.dumps(d, sort_keys=True).encode() + b"\n" for d in docs))
        f.flush()
        os.fsync(fd)


def set_aside(path: Path, rejected: Path, usable: Callable[[object], bool]) -> int:
    """Move the journal's lines that `usable` does not take to `rejected`, their bytes as they
    were, keeping the rest; the number moved. Only the run that holds the directory calls it."""
    data = read_journal(path)
    if not data:
        return 0
    lines = parsed(data, usable)
    bad = [raw for raw, line in lines if line is None]
    if not bad and data == b"".join(raw + b"\n" for raw, _ in lines):
        return 0
    fd = os.open(rejected, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "ab") as f:
        f.write(b"".join(raw + b"\n" for raw in bad))
        f.flush()
        os.fsync(fd)
    atomic_write(path, b"".join(raw + b"\n" for raw, line in lines if line is not None))
    return len(bad)
