"""A second libvirt daemon pair on this machine, reached over loopback TCP: a second host
for scale-out tests (`qemu+tcp://127.0.0.1:PORT/system`).

A second `libvirtd` cannot simply be started with a config file of its own beside the first:
each of its drivers takes the lock `/run/libvirt/DRIVER/driver.pid` that the first one holds,
and both would manage the same state under /run/libvirt and /var/lib/libvirt. So this one
runs in a mount namespace of its own, where private directories are mounted over those (and
over /var/cache/libvirt and /var/log/libvirt), with a virtlogd of its own; /etc is only read.
Its QEMUs see the rest of the file system as it is, so the staging of `machine`
(hard links under the temp dir) and its unix-socket channels work as with the first daemon.
It listens on 127.0.0.1 only, without authentication.
"""

import logging
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import InfraError
from plugpull.guest.libvirt.daemon import STOP_WAIT_SECONDS, pid_alive
from plugpull.paths import make_tempdir

log = logging.getLogger(__name__)

PRIVATE = {"run": "/run/libvirt", "lib": "/var/lib/libvirt", "cache": "/var/cache/libvirt",
           "log": "/var/log/libvirt"}
START_WAIT_SECONDS = 30.0


def config_text(port: int) -> str:
    return (f'listen_tls = 0\nlisten_tcp = 1\nlisten_addr = "127.0.0.1"\ntcp_port = "{port}"\n'
            'auth_tcp = "none"\nauth_unix_rw = "none"\n')


def start_script(root: Path) -> str:
    """The shell script run in the new mount namespace: private dirs, then both daemons."""
    mounts = "".join(f"mkdir -p {target} && mount --bind {root / name} {target} && "
                     for name, target in PRIVATE.items())
    return (f"{mounts}virtlogd -d -p {root / 'virtlogd.pid'} && "
            f"libvirtd -d --listen -f {root / 'libvirtd.conf'} -p {root / 'libvirtd.pid'}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class TcpInstance:
    root: Path
    port: int

    @property
    def uri(self) -> str:
        return f"qemu+tcp://127.0.0.1:{self.port}/system"

    @property
    def qemu_pid_dir(self) -> Path:
        return self.root / "run" / "qemu"

    def pid(self, program: str) -> int | None:
        try:
            return int((self.root / f"{program}.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill_daemon(self) -> None:
        """SIGKILL the libvirtd (a host dropping out); its QEMUs live on until `stop`."""
        pid = self.pid("libvirtd")
        if pid and pid_alive(pid):
            os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        """End libvirtd, then any QEMU it left (a killed libvirtd leaves them), then virtlogd."""
        _end(self.pid("libvirtd"))
        for pid_file in self.qemu_pid_dir.glob("*.pid"):
            try:
                _end(int(pid_file.read_text().strip()), signal.SIGKILL)
            except ValueError:
                pass
        _end(self.pid("virtlogd"))
        subprocess.run(["rm", "-rf", str(self.root)], check=False)


def start_tcp_instance() -> TcpInstance:
    """Start the pair and wait for its port; InfraError (nothing left running) if it fails."""
    root = make_tempdir("libvirtd")
    for name in PRIVATE:
        (root / name).mkdir()
    instance = TcpInstance(root, free_port())
    (root / "libvirtd.conf").write_text(config_text(instance.port))
    out = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", start_script(root)],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + START_WAIT_SECONDS
    while out.returncode == 0 and not port_open(instance.port) and time.monotonic() < deadline:
        time.sleep(0.1)
    if out.returncode != 0 or not port_open(instance.port):
        instance.stop()
        raise InfraError(f"a second libvirtd did not start on 127.0.0.1:{instance.port}: "
                         f"{out.stderr.strip() or 'its port did not open'}")
    log.info("second libvirtd at %s (pid %s)", instance.uri, instance.pid("libvirtd"))
    return instance


def _end(pid: int | None, sig: int = signal.SIGTERM) -> None:
    if not pid or not pid_alive(pid):
        return
    os.kill(pid, sig)
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
