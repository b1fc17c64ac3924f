"""Results written atomically: a reader sees the old file or the new one, never half of one.

Everything is written beside its destination under a temporary name and renamed over it,
so the rename stays on one filesystem; on failure the temporary is removed. A rename swaps
whatever is at the path, so only a regular file (or, for a directory, a directory) is ever
replaced: a device node such as /dev/null stays what it is.

A symbolic link at an output is refused too, dangling or not: replacing it would drop the
link, and writing through it would write somewhere the command line does not name.

`check_output` tries an output path before a run starts, the way the run will write it: a
temporary file created and removed beside it (`os.access` says yes to root everywhere).
`open_regular` opens what plugpull reads, refusing anything but a regular file, and reads it
up to a bound that fits what it holds; `read_input` is the one way to read a file the user names.
"""

import argparse
import errno
import fcntl
import json
import os
import secrets
import shutil
import stat
import tempfile
import tomllib
from contextlib import contextmanager
from pathlib import Path

from plugpull.errors import UsageError

READ_MAX = 1 << 30  # the most plugpull reads whole of any file; each kind of file has its own, smaller bound
SAVED_JSON_MAX = 256 << 20  # a saved state's JSON files: record.json holds an ack in 110 bytes, 10**6 in 105 MiB
TEXT_MAX = 4 << 20  # what a person writes and plugpull reads whole: a case file, a script, a summary


class NotReplaceable(UsageError):
    """An output path holds something plugpull must not replace (a device node, a FIFO...)."""


def _what(mode: int) -> str:
    kinds = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def refuse_unreplaceable(dest: Path, directory: bool = False, flag: str = "") -> None:
    """A NotReplaceable error if `dest` exists and is not what a write may replace."""
    try:
        mode = os.lstat(dest).st_mode
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            return
        raise UsageError(f"{flag} {dest}: {e.strerror}".lstrip()) from None
    if stat.S_ISLNK(mode):
        where = "a dangling symbolic link" if not os.path.exists(dest) else f"a symbolic link to {os.readlink(dest)}"
        raise NotReplaceable(f"{flag} {dest}: {where}; plugpull never writes through or replaces a link: "
                             "give a path that is not one".lstrip())
    if directory and not stat.S_ISDIR(mode):
        raise NotReplaceable(f"{flag} {dest}: {_what(mode)}, not a directory".lstrip())
    if not directory and not stat.S_ISREG(mode):
        raise NotReplaceable(f"{flag} {dest}: {_what(mode)}, not a regular file; plugpull writes only "
                             "regular files".lstrip())


@contextmanager
def atomic_path(dest: Path, directory: bool = False):
    """Yield a temporary path beside `dest` (a file, or an empty directory); when the block
    ends without an exception it replaces `dest`, otherwise it is removed."""
    dest = Path(dest)
    refuse_unreplaceable(dest, directory)
    if directory:
        tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp"))
    else:
        fd, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
    try:
        yield tmp
        refuse_unreplaceable(dest, directory)
        if directory and dest.is_dir():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise


@contextmanager
def staged_directory(dest: Path, last: str | None = None, inputs=()):
    """Yield a new empty directory beside `dest` to write a directory's worth of files in
    (a report). When the block ends well it becomes `dest`, renamed whole, or, when `dest`
    is there already, its entries replace their namesakes in `dest`, `last` (an index)
    last, so that no index names a page not yet there (`_swap_in`). On an error (a full disk)
    it is removed and `dest` is as it was: no half-written directory is left. An entry that
    would replace one of the command's `inputs`, or a part of one, is a UsageError, nothing
    moved in (`report --out` a matrix cell's artifacts: its states/ are the report's input)."""
    dest = Path(dest)
    refuse_unreplaceable(dest, directory=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp"))
    try:
        os.chmod(staged, 0o755)
        yield staged
        if not os.path.lexists(dest):
            os.rename(staged, dest)
            return
        refuse_replacing(dest, [entry.name for entry in staged.iterdir()], inputs)
        _swap_in(staged, dest, last)
        staged.rmdir()
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise


def refuse_replacing(dest: Path, names: list[str], inputs, flag: str = "--out") -> None:
    """A UsageError if `dest/NAME`, for a NAME a command writes, is one of its `inputs` or holds
    one (writing beside an input, or inside an input directory, replaces nothing)."""
    for name in sorted(names):
        there = os.path.realpath(dest / name)
        for each in inputs:
            real = os.path.realpath(each)
            if real == there or real.startswith(there + os.sep):
                raise UsageError(f"{flag} {dest}: its {name} would be written over {each}, an input of this "
                                 "command: give another directory")


def _swap_in(staged: Path, dest: Path, last: str | None) -> None:
    """`staged`'s entries moved into `dest`, `last` last, each namesake moved aside first (never
    followed if it is a link) and removed once all are in. On an error every entry moved in
    goes back to `staged` and every namesake back to its name: `dest` is as it was."""
    moved: list[tuple[Path, Path | None]] = []  # (the name in dest, its namesake moved aside)
    try:
        for entry in sorted(staged.iterdir(), key=lambda p: p.name == last):
            there = dest / entry.name
            aside = dest / f".{entry.name}.{secrets.token_hex(6)}.old" if os.path.lexists(there) else None
            if aside is not None:
                os.rename(there, aside)
            moved.append((there, aside))
            os.rename(entry, there)
    except BaseException:
        for there, aside in reversed(moved):
            if os.path.lexists(there) and not os.path.lexists(staged / there.name):
                os.rename(there, staged / there.name)
            if aside is not None:
                os.rename(aside, there)
        raise
    for _, aside in moved:
        if aside is not None:
            if aside.is_dir() and not aside.is_symlink():
                shutil.rmtree(aside, ignore_errors=True)
            else:
                aside.unlink()


def atomic_write(dest: Path, data: bytes | str, mode: int = 0o644) -> None:
    with atomic_path(dest) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, mode)


def atomic_write_json(dest: Path, doc, indent: int | None = 1) -> None:
    atomic_write(dest, json.dumps(doc, indent=indent) + "\n")


class InputPath(type(Path())):
    """A path given on the command line for plugpull to read; `reads`: the files a directory
    input is read for (a state directory's state.json), each an input too."""

    reads: tuple[str, ...] = ()

    def inputs(self) -> list[Path]:
        return [self, *(self / name for name in self.reads)]


class StateDir(InputPath):
    """A saved crash state's directory: its state.json and minimise.json are read, and the
    record its state.json names, every file in it (record.json, the images, the write logs)."""

    reads = ("state.json", "minimise.json")

    def inputs(self) -> list[Path]:
        return [*super().inputs(), *self.record_files()]

    def record_files(self) -> list[Path]:
        """The record's directory and its files; none when state.json names none that can be
        listed (the command says why, when it reads them)."""
        try:
            record = self / json.loads(read_regular(self / "state.json", most=SAVED_JSON_MAX))["record"]
            return [record, *sorted(record.iterdir())]
        except (OSError, ValueError, KeyError, TypeError, UsageError):
            return []


class CaseFile(InputPath):
    """A case file: the record its [replay] table names is read too, every file in it."""

    def inputs(self) -> list[Path]:
        try:
            replay = tomllib.loads(read_regular(self, most=TEXT_MAX).decode())["replay"]["record"]
            record = self.parent / replay
            return [self, record, *sorted(record.iterdir())]
        except (OSError, ValueError, KeyError, TypeError, UsageError):
            return [self]


class OutputPath(type(Path())):
    """A path given on the command line for plugpull to write."""


def a_path(text: str) -> InputPath:
    """An argparse `type` for a path plugpull reads: any text but none (`""` is no path)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got ''")
    return InputPath(text)


def a_case_file(text: str) -> CaseFile:
    """An argparse `type` for a case file (`a_path`)."""
    return CaseFile(a_path(text))


def a_state_dir(text: str) -> StateDir:
    """An argparse `type` for a saved state's directory (`a_path`)."""
    return StateDir(a_path(text))


def an_output(text: str) -> OutputPath:
    """An argparse `type` for a path plugpull writes (a file or a directory): `a_path`, and
    tried by `check_output` before the run."""
    return OutputPath(a_path(text))


def first_link(root: Path, path: Path) -> Path | None:
    """The first symbolic link on the way from the directory `root` down to `path` (`path`
    itself included; `path` below `root`), or None: what is reached through it may lie
    anywhere."""
    rel = Path(path).relative_to(root)
    return next((p for i in range(len(rel.parts)) if (p := Path(root, *rel.parts[:i + 1])).is_symlink()), None)


def same_path(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same place once links are followed, or (both
    there) the same inode under two names."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_overlaps(named: list[tuple[str, Path]]) -> None:
    """A UsageError if an output names the same file as an input or as another output, so
    that no run writes over what it reads (`reproduce c.toml --junit c.toml`) or writes two
    results into one file. `named`: (how the path was given, the path), in order; an input
    directory's files it is read for (`InputPath.reads`) count as inputs."""
    named = [(flag, each) for flag, path in named
             for each in (path.inputs() if isinstance(path, InputPath) else [path])]
    for i, (flag, path) in enumerate(named):
        for other_flag, other in named[:i]:
            if (isinstance(path, OutputPath) or isinstance(other, OutputPath)) and same_path(path, other):
                role = "output" if isinstance(other, OutputPath) else "input"
                raise UsageError(f"{flag} {path}: the same file as {other_flag} {other}, an {role} of this "
                                 "command: give another path")


a_path.any_text = a_state_dir.any_text = a_case_file.any_text = an_output.any_text = True  # a path may hold any text


def check_input(path: Path, what: str, directory_ok: bool = False) -> Path:
    """A file plugpull reads: if something is there, a regular file (or a directory, when
    `directory_ok`), so that a FIFO never blocks a read and a device is never read as a
    file. What is missing is left to the reader, which names it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return Path(path)
    if not (stat.S_ISREG(mode) or (directory_ok and stat.S_ISDIR(mode))):
        raise UsageError(f"{what} {path}: {_what(mode)}, not a regular file".lstrip())
    return Path(path)


def open_regular(path: Path, what: str = "", most: int | None = None, follow: bool = True):
    """`path` opened for reading (binary), if it is a regular file of at most `most` bytes; a
    one-line UsageError naming `what` and the path if it is a FIFO, a socket, a device, a
    directory, larger, or (`follow` False) a symbolic link.

    The file is opened with O_NONBLOCK and the open descriptor is asked what it is (fstat):
    an open of a FIFO for reading would otherwise wait for a writer, for ever, and a stat
    of the path before the open could be answered by one file and the open by another put
    there between the two. The flag is cleared before the caller reads. Other errors (no
    such file, no permission) are the OSError of the open, for the caller to word."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow and os.path.islink(path):
            raise UsageError(f"{what} {path}: a symbolic link, not followed".lstrip()) from None
        if e.errno != errno.ENXIO:  # what a socket's open says
            raise
        raise UsageError(f"{what} {path}: {_what(os.stat(path).st_mode)}, not a regular file".lstrip()) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (most is not None and st.st_size > most):
        os.close(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{what} {path}: {_what(st.st_mode)}, not a regular file".lstrip())
        raise too_large(path, what, most)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return os.fdopen(fd, "rb")


def too_large(path: Path, what: str, most: int) -> UsageError:
    return UsageError(f"{what} {path}: larger than the {_size(most)} plugpull reads of such a file".lstrip())


def _size(n: int) -> str:
    return next(f"{n // (1 << s)} {unit}" for s, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB"), (0, "bytes"))
                if n >= 1 << s or not s)


def read_regular(path: Path, what: str = "", most: int = READ_MAX, follow: bool = True) -> bytes:
    """The bytes of `path`, a regular file of at most `most` bytes (`open_regular`); a file
    that grows past the bound while it is read is refused too."""
    with open_regular(path, what, most, follow) as f:
        data = f.read(most + 1)
    if len(data) > most:
        raise too_large(path, what, most)
    return data


def read_regular_text(path: Path, what: str = "", errors: str = "strict", most: int = READ_MAX,
                      follow: bool = True) -> str:
    """The text (UTF-8) of `path`, a regular file (`read_regular`)."""
    return read_regular(path, what, most, follow).decode("utf-8", errors)


def read_input(path: Path, what: str, most: int) -> bytes:
    """A file the user handed in (`what`: the option that named it), read whole: a regular
    file of at most `most` bytes, opened without waiting (`read_regular`). Every way it can
    fail (missing, unreadable, a FIFO or a device, too large) is a one-line UsageError naming
    `what` and the path."""
    try:
        return read_regular(path, what, most)
    except FileNotFoundError:
        raise UsageError(f"{what} {path}: no such file") from None
    except OSError as e:
        raise UsageError(f"{what} {path}: {e.strerror or e}") from None


def read_input_text(path: Path, what: str, most: int) -> str:
    """`read_input`, as text: UTF-8 without NUL bytes, else a one-line UsageError."""
    data = read_input(path, what, most)
    try:
        if b"\0" in data:
            raise ValueError
        return data.decode("utf-8")
    except ValueError:
        raise UsageError(f"{what} {path}: not a text file (UTF-8)") from None


def check_output(path: Path, flag: str, directory: bool = False, parents: bool = False) -> Path:
    """An output path (a file, or with `directory` a directory plugpull writes into), tried
    before anything runs: what is there must be replaceable, and a temporary file must come
    and go where the run will write. `parents`: missing directories above it may be created
    (their names are checked; the nearest existing one is tried). A UsageError names `flag`."""
    path = Path(path)
    refuse_unreplaceable(path, directory, flag)
    where = path if directory and path.is_dir() else path.parent
    missing = []
    while not where.exists() and where != where.parent:
        missing.append(where.name)
        where = where.parent
    if missing and not parents:
        raise UsageError(f"{flag} {path}: {path.parent} does not exist")
    if not where.is_dir():
        raise UsageError(f"{flag} {path}: {where} is not a directory")
    _try_names(path, flag, where, missing, path.name)
    return path


def _try_names(path: Path, flag: str, where: Path, missing: list[str], name: str) -> None:
    """Create and remove in `where` a temporary file named as `atomic_path` names one; check
    the names of the directories still to be made (`missing`) and of the file itself."""
    try:
        longest = os.pathconf(where, "PC_NAME_MAX")
    except OSError:
        longest = 255
    if any(len(os.fsencode(n)) > longest for n in missing) or len(os.fsencode(name)) + 14 > longest:
        raise UsageError(f"{flag} {path}: {os.strerror(errno.ENAMETOOLONG)}")
    try:
        fd, trial = tempfile.mkstemp(dir=where, prefix=f".{name}.", suffix=".tmp")
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot write in {where} ({e.strerror})") from None
    os.close(fd)
    os.unlink(trial)
