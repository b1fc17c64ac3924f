"""A hunt's directory has one writer: `hold(out)` takes hunt.lock for the hunt's life.

The lock is flock(2) on hunt.lock, which the kernel drops when its holder dies, however it
dies: a killed hunt never blocks its resume, and no stale lock needs clearing. The file keeps
its holder's pid, start time and command, so that a second hunt, refused, can name it. Taken
again in the process that holds it (the command, then the hunt it runs), it is counted, not
opened again. The holder removes the file when it lets go (and the directories it made, when
they are empty: a refused hunt leaves nothing); a process that locked a file so removed sees
that the name no longer leads to it, and tries again.
"""

import fcntl
import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from plugpull.errors import UsageError

LOCK = "hunt.lock"
_held: dict[tuple[int, int], list] = {}  # (st_dev, st_ino) of a held directory -> [fd, count]


class HuntBusy(UsageError):
    """Another process holds the hunt's directory."""


@contextmanager
def hold(out: Path, lock: str = LOCK, what: str = "hunt"):
    """Hold `out` (made if new) as its one writer for the block; HuntBusy naming the holder if
    another process holds it. `lock` and `what`: the lock file's name and what writes there,
    for another command's directory that has one writer too (a bisect's)."""
    out = Path(out)
    made = [d for d in (out, *out.parents) if not d.exists()]
    out.mkdir(parents=True, exist_ok=True)
    st = os.stat(out)
    key = (st.st_dev, st.st_ino)
    try:
        if key in _held:
            _held[key][1] += 1
        else:
            _held[key] = [_take(out, lock, what), 1]
    except BaseException:
        _remove_empty(made)
        raise
    try:
        yield
    finally:
        _held[key][1] -= 1
        if not _held[key][1]:
            fd = _held.pop(key)[0]
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
        fd = os.open(out / lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise HuntBusy(f"{out}: another {what} is writing to it ({holder}): wait for it to end, or give "
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
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet said which"
