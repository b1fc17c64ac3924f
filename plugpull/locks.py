"""Every lock plugpull takes, in one place: each is flock(2) on a lock file, which the kernel
drops when its holder dies, however it dies, so no stale lock ever needs clearing.

    exclusive(lock)      one process at a time (a cache being filled, a build's workspace):
                         waits for the holder
    shared(lock)         held while a process uses a cached entry; `take_shared` keeps it for
                         the process's life (a guest image in use)
    held(lock)           whether another process holds it, shared or exclusive (prune's probe)
    free(lock)           taken at once when nobody holds it, else not (a dead process's marks)
    hold(out, lock)      a directory's one writer (a hunt's, a bisect's): a second is refused
                         at once (`WriterBusy`), naming the holder

Lock files are opened without following a link, and made when missing, beside what they guard.
"""

import fcntl
import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from plugpull.errors import UsageError

_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC
_writers: dict[tuple[int, int], list] = {}  # (st_dev, st_ino) of a held directory -> [fd, count]


class WriterBusy(UsageError):
    """Another process writes to the directory (it holds its writer lock)."""


def _open(lock: Path) -> int:
    Path(lock).parent.mkdir(parents=True, exist_ok=True)
    return os.open(lock, os.O_RDWR | os.O_CREAT | _OPEN, 0o644)


@contextmanager
def exclusive(lock: Path):
    """Hold `lock` alone for the block, waiting for any holder."""
    fd = _open(lock)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def take_shared(lock: Path) -> int:
    """A shared hold of `lock` for as long as the descriptor returned stays open."""
    fd = _open(lock)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def shared(lock: Path):
    """Hold `lock` shared for the block: a prune keeps what it guards meanwhile."""
    fd = take_shared(lock)
    try:
        yield
    finally:
        os.close(fd)


@contextmanager
def free(lock: Path):
    """True, holding `lock` for the block, when nobody held it; False when another process
    does, or when there is no such file (none is made)."""
    try:
        fd = os.open(lock, os.O_RDONLY | _OPEN)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def held(lock: Path) -> bool:
    """A lock file another process holds (shared or exclusive); no such file: not held."""
    if not os.path.lexists(lock):
        return False
    with free(lock) as mine:
        return not mine


@contextmanager
def hold(out: Path, lock: str, what: str):
    """Hold `out` (made if new) as its one writer for the block, by the lock file `out/lock`;
    WriterBusy naming the holder if another process holds it (`what` writes there: a hunt, a
    bisect). The file keeps its holder's pid, start time and command. Taken again in the
    process that holds it (the command, then the run it starts), it is counted, not opened
    again. The holder removes the file when it lets go (and the directories it made, when they
    are empty: a refused writer leaves nothing); a process that locked a file so removed sees
    that the name no longer leads to it, and tries again."""
    out = Path(out)
    made = [d for d in (out, *out.parents) if not d.exists()]
    out.mkdir(parents=True, exist_ok=True)
    st = os.stat(out)
    key = (st.st_dev, st.st_ino)
    try:
        if key in _writers:
            _writers[key][1] += 1
        else:
            _writers[key] = [_take(out, lock, what), 1]
    except BaseException:
        _remove_empty(made)
        raise
    try:
        yield
    finally:
        _writers[key][1] -= 1
        if not _writers[key][1]:
            fd = _writers.pop(key)[0]
            (out / lock).unlink(missing_ok=True)  # still held: no other process has this name's file locked
            os.close(fd)
            _remove_empty(made)


def _remove_empty(made: list[Path]) -> None:
    for directory in made:
        try:
            directory.rmdir()
        except OSError:
            return


def _take(out: Path, lock: str, what: str) -> int:
    while True:
        fd = os.open(out / lock, os.O_RDWR | os.O_CREAT | _OPEN, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise WriterBusy(f"{out}: another {what} is writing to it ({holder}): wait for it to end, or give "
                             "another --out") from None
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, out / lock):
            break
        os.close(fd)  # its holder removed it as it let go: lock the file the name leads to now
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                              "command": " ".join(sys.argv)[:500]}).encode() + b"\n", 0)
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def _holder(fd: int) -> str:
    try:
        doc = json.loads(os.pread(fd, 4096, 0))
        return f"pid {int(doc['pid'])}, since {doc['started']}: {doc['command']}"
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return "a process that has not yet said which"
