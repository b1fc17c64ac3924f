"""The scheduler and the worker processes, and what they may bind to.

A scheduler binds to 127.0.0.1 unless told otherwise; any other address needs TLS (Dask's own
`Security`, from a CA, a certificate and its key), and without it is refused before anything
listens (`UsageError`), as are TLS files no member could use (`tls`) and a port in use. A
worker connects to a `tcp://` scheduler, or with TLS to a `tls://` one; every wait for the
scheduler is bounded (`reach`).
"""

import asyncio
import errno
import ipaddress
import logging
import shutil
import signal
import socket
from pathlib import Path

from plugpull.cluster.reach import SchedulerUnreachable, probe
from plugpull.cluster.tls import check_tls_files
from plugpull.cluster.workdir import worker_dir
from plugpull.errors import InfraError, UsageError
from plugpull.paths import make_tempdir
from plugpull.values import shown

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
REGISTER_TIMEOUT = 30.0  # seconds a worker that reached its scheduler waits to be taken in


def security(ca: Path | None, cert: Path | None, key: Path | None):
    """Dask's `Security` for mutual TLS from a CA file, a certificate and its key (the same
    for scheduler, workers and client); None when none is given. All three or none."""
    given = [p for p in (ca, cert, key) if p is not None]
    if not given:
        return None
    if len(given) != 3:
        raise UsageError("TLS needs --tls-ca-file, --tls-cert and --tls-key together")
    check_tls_files(ca, cert, key)
    from distributed.security import Security
    return Security(tls_ca_file=str(ca), tls_client_cert=str(cert), tls_client_key=str(key),
                    tls_scheduler_cert=str(cert), tls_scheduler_key=str(key), tls_worker_cert=str(cert),
                    tls_worker_key=str(key), require_encryption=True)


def is_loopback(host: str) -> bool:
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback
                   for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP))
    except (OSError, ValueError):
        return False


def check_bind(host: str, sec) -> None:
    """Refuse a host that names no address, and listening on an address other machines can
    reach without TLS."""
    try:
        socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise UsageError(f"--host {shown(host)}: not a host name or address this machine knows ({reason})") from None
    if sec is None and not is_loopback(host):
        raise UsageError(f"--host {host} is not a loopback address: a scheduler listening there needs TLS "
                         "(--tls-ca-file, --tls-cert, --tls-key)")


def host_of(address: str) -> str:
    """The host of a Dask address (`tcp://HOST:PORT`, `tls://[::1]:PORT`)."""
    return address.split("://")[-1].rsplit(":", 1)[0].strip("[]")


def check_reach(address: str, sec, flag: str) -> None:
    """Refuse to send records or states to a scheduler off loopback without TLS."""
    if sec is None and not is_loopback(host_of(address)):
        raise UsageError(f"{flag} {address} is not on loopback: reaching it needs TLS "
                         "(--tls-ca-file, --tls-cert, --tls-key and a tls:// address)")


def check_port_free(host: str, port: int) -> None:
    """Refuse, before Dask logs anything, a port another process listens on (or the system
    refuses to give)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:
        raise UsageError(f"--host {host}: cannot listen there ({e})") from None
    family, kind, proto, _, where = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(where)
        except OSError as e:
            said = f"port {port} is in use" if e.errno == errno.EADDRINUSE else f"cannot listen on port {port}"
            raise UsageError(f"--port {port}: {said} on {host} ({e.strerror})") from None


def run_scheduler(host: str = LOOPBACK, port: int = 8786, sec=None, announce=print) -> None:
    """A scheduler until the process is stopped; `announce` gets its address once it listens.
    Dask's scratch space is a temp dir of plugpull's own, removed when the scheduler stops
    (and by a later run if it was killed), never `$TMPDIR/dask-scratch-space`."""
    check_bind(host, sec)
    check_port_free(host, port)
    from distributed import Scheduler

    async def serve(scratch: Path):
        protocol = "tls" if sec else "tcp"
        async with Scheduler(host=host, port=port, protocol=protocol, security=sec, dashboard=False,
                             dashboard_address=f"{LOOPBACK}:0", local_directory=str(scratch)) as s:
            announce(s.address)
            await s.finished()

    scratch = make_tempdir("scheduler")
    try:
        asyncio.run(serve(scratch))
    except RuntimeError as e:  # Dask's "Scheduler failed to start": its cause is the message
        cause = e.__cause__ or e
        raise InfraError(f"the scheduler on {host}:{port} failed to start: {cause}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_worker(scheduler: str, workdir: Path, rig, sec=None, nthreads: int = 1, announce=print) -> None:
    """A worker with plugpull's plugin until the process is stopped (SIGTERM or SIGINT close
    it, and the plugin's teardown the checker guest it keeps), listening on loopback for a
    loopback scheduler; a remote one needs TLS, and its worker listens where it reaches the
    scheduler. A scheduler that does not answer within `reach.CONNECT_TIMEOUT` seconds, or
    does not take the worker in within `REGISTER_TIMEOUT`, ends it with one line; its work
    dir is swept of what dead workers left (`workdir`)."""
    check_reach(scheduler, sec, "--scheduler")
    listen = LOOPBACK if is_loopback(host_of(scheduler)) else None
    probe(scheduler, sec, "--scheduler")
    with worker_dir(workdir) as mine:
        try:
            asyncio.run(_serve_worker(scheduler, mine, rig, sec, nthreads, listen, announce))
        except TimeoutError:
            raise SchedulerUnreachable(f"--scheduler {scheduler}: the scheduler did not take this worker in "
                                       f"within {REGISTER_TIMEOUT:.0f} s") from None


async def _serve_worker(scheduler: str, mine, rig, sec, nthreads: int, listen, announce) -> None:
    from distributed import Worker
    from plugpull.cluster.worker import PlugpullPlugin, image_resource
    async with Worker(scheduler, nthreads=nthreads, local_directory=str(mine.dask), host=listen, security=sec,
                      dashboard=False, dashboard_address=f"{LOOPBACK}:0", death_timeout=REGISTER_TIMEOUT,
                      plugins={PlugpullPlugin(mine.root, rig)}, resources={image_resource(rig.image.key): 1}) as w:
        closing = []  # the close's task, held while it runs
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, lambda: closing.append(asyncio.ensure_future(
                w.close(reason="signal"))))
        announce(w.address)
        await w.finished()
