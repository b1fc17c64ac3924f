"""The libvirt daemons of this host, started by plugpull when nobody runs them.

A host without an init system that starts them (a container, a CI machine) has libvirt
installed but no `libvirtd` nor `virtlogd` running, and a domain cannot be created without
both. `LocalDaemons.ensure()` starts whichever of the two has no live socket, each with
`-d` (it forks and writes its pid file), waits for its socket, and remembers the pid of what
it started; `stop()` ends exactly those, never a daemon that was running before. Neither
daemon is given `--listen`: they serve their local unix sockets only.

Several plugpull processes (two runs, pytest-xdist workers) share the daemons the first of
them started: each registers in a users file under the run dir (`users`), under a lock,
and only the last user to leave stops them.
"""

import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.errors import InfraError, ToolMissing
from plugpull.guest.libvirt.kvmaccess import kvm_denied
from plugpull.guest.libvirt.users import daemon_users

log = logging.getLogger(__name__)

RUN_DIR = Path("/run")
SOCKET_WAIT_SECONDS = 30.0
STOP_WAIT_SECONDS = 15.0


@dataclass(frozen=True)
class Daemon:
    program: str
    socket: Path
    pid_file: Path


# virtlogd first: libvirtd hands every domain's console log to it.
DAEMONS = (
    Daemon("virtlogd", RUN_DIR / "libvirt/virtlogd-sock", RUN_DIR / "virtlogd.pid"),
    Daemon("libvirtd", RUN_DIR / "libvirt/libvirt-sock", RUN_DIR / "libvirtd.pid"),
)


def socket_alive(path: Path) -> bool:
    """Whether something accepts connections on this unix socket (a stale file does not)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2.0)
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def pid_alive(pid: int) -> bool:
    """Whether the process runs; a zombie (exited, not reaped by its new parent) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def missing() -> list[str]:
    """The daemon programs this host lacks, for `plugpull doctor` and skip reasons."""
    return [d.program for d in DAEMONS if shutil.which(d.program) is None]


@dataclass
class LocalDaemons:
    """This process's share of the daemons plugpull started: the last user stops them."""

    users_file: Path = RUN_DIR / "plugpull-libvirtd.users"
    started: dict[str, int] = field(default_factory=dict)
    _user: str = ""

    def ensure(self) -> None:
        with daemon_users(self.users_file) as users:
            for daemon in DAEMONS:
                if not socket_alive(daemon.socket):
                    users.started.pop(daemon.program, None)
                    self._start(daemon)
                    users.started[daemon.program] = self.started[daemon.program]
            self._user = users.join()

    def _start(self, daemon: Daemon) -> None:
        if shutil.which(daemon.program) is None:
            raise ToolMissing(daemon.program, "install the Debian package libvirt-daemon-system (make deps)")
        if os.geteuid() != 0:
            raise InfraError(f"{daemon.program} is not running, and only root can start it for qemu:///system")
        out = subprocess.run([daemon.program, "-d"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            raise InfraError(f"{daemon.program} -d failed: {out.stderr.strip()}")
        deadline = time.monotonic() + SOCKET_WAIT_SECONDS
        while not socket_alive(daemon.socket):
            if time.monotonic() > deadline:
                raise InfraError(f"{daemon.program} started but {daemon.socket} did not answer "
                                 f"within {SOCKET_WAIT_SECONDS:.0f} s")
            time.sleep(0.05)
        pid = _read_pid(daemon.pid_file)
        if pid is None:
            raise InfraError(f"{daemon.program} started but left no pid in {daemon.pid_file}")
        self.started[daemon.program] = pid
        log.info("started %s (pid %d)", daemon.program, pid)

    def stop(self) -> None:
        """Leave; the last user SIGTERMs each daemon plugpull started, libvirtd before
        virtlogd, and waits for each. A daemon plugpull did not start is never stopped."""
        if not self._user:
            return
        with daemon_users(self.users_file) as users:
            users.leave(self._user)
            self._user = ""
            self.started.clear()
            if users.active:
                return
            for program in reversed([d.program for d in DAEMONS if d.program in users.started]):
                _terminate(program, users.started.pop(program))


def _terminate(program: str, pid: int) -> None:
    if not pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    while pid_alive(pid):
        if time.monotonic() > deadline:
            log.warning("%s (pid %d) did not stop within %.0f s", program, pid, STOP_WAIT_SECONDS)
            return
        time.sleep(0.05)
    log.info("stopped %s (pid %d)", program, pid)


def _libvirtd_version() -> str:
    out = subprocess.run(["libvirtd", "--version"], capture_output=True, text=True)
    return out.stdout.split()[-1] if out.returncode == 0 and out.stdout.split() else "unknown"


def doctor_rows(needed: bool) -> list[tuple[str, str, bool]]:
    """(name, what is there, ok) for `plugpull doctor`: libvirt is missing only if `needed`
    (--backend libvirt); otherwise an absent libvirt is reported and is fine."""
    rows = []
    absent = missing()
    if absent:
        rows.append(("libvirt", f"missing {', '.join(absent)}: install libvirt-daemon-system (make deps)",
                     not needed))
        return rows
    running = [d.program for d in DAEMONS if socket_alive(d.socket)]
    state = ("running" if len(running) == len(DAEMONS)
             else f"{', '.join(running) or 'neither daemon'} running; plugpull starts the rest when needed")
    rows.append(("libvirt", f"libvirtd {_libvirtd_version()}, {state}", True))
    if slow := kvm_denied():
        rows.append(("libvirt kvm", slow, True))
    try:
        import libvirt
        rows.append(("libvirt-python", ".".join(str(libvirt.getVersion() // f % 1000) for f in (1_000_000, 1000, 1)),
                     True))
    except ImportError:
        rows.append(("libvirt-python", "missing: pip install libvirt-python (make deps)", not needed))
    return rows
