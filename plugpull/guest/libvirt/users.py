"""Who uses the libvirt daemons plugpull started, in a JSON file read and written under an
exclusive `flock`: the daemons' pids, and one entry per user (`pid:start-time:token`, so a
reused pid or a second user in one process is told apart). A user whose process is gone (a
SIGKILLed plugpull) is dropped the next time the file is opened."""

import json
import os
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.locks import exclusive


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return None if fields[0] == "Z" else fields[19]


def user_alive(user: str) -> bool:
    pid, started, _ = user.split(":", 2)
    return start_time(int(pid)) == started


@dataclass
class Users:
    started: dict[str, int] = field(default_factory=dict)
    active: list[str] = field(default_factory=list)

    def join(self) -> str:
        me = f"{os.getpid()}:{start_time(os.getpid())}:{uuid.uuid4().hex[:8]}"
        self.active.append(me)
        return me

    def leave(self, user: str) -> None:
        if user in self.active:
            self.active.remove(user)


@contextmanager
def daemon_users(path: Path):
    """The users file's content, locked until the block ends, then written back."""
    with exclusive(path.with_suffix(".lock")):
        users = _read(path)
        users.active = [u for u in users.active if _well_formed(u) and user_alive(u)]
        yield users
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"started": users.started, "users": users.active}))
        os.replace(tmp, path)


def _well_formed(user) -> bool:
    return isinstance(user, str) and user.count(":") >= 2 and user.split(":", 1)[0].isdigit()


def _read(path: Path) -> Users:
    try:
        doc = json.loads(path.read_text())
        return Users({str(k): int(v) for k, v in doc.get("started", {}).items()}, list(doc.get("users", [])))
    except (OSError, ValueError, AttributeError, TypeError):
        return Users()
