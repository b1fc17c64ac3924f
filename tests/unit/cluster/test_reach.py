"""Reaching a scheduler without hanging, a lost worker named, a dead worker's leftovers swept,
TLS files tried: without a VM, against sockets of the test's own on 127.0.0.1."""

import asyncio
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest

from plugpull.cluster import workdir as wd
from plugpull.cluster.lost import lost_message
from plugpull.cluster.reach import SchedulerUnreachable, _first_cause, checked_address, probe
from plugpull.errors import UsageError


@contextmanager
def listening(on_accept):
    """A port on 127.0.0.1 whose connections are handed to `on_accept`; closed on leaving."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                on_accept(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


@contextmanager
def silent_listener():
    """A port on 127.0.0.1 that accepts connections and never says a word; closed on leaving."""
    held = []
    with listening(held.append) as port:
        try:
            yield port
        finally:
            for conn in held:
                conn.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_listener_that_never_answers_ends_the_probe_in_the_time_said():
    with silent_listener() as port:
        started = time.monotonic()
        with pytest.raises(SchedulerUnreachable, match=r"no Dask scheduler answered within 2 s"):
            probe(f"tcp://127.0.0.1:{port}", None, "--cluster", timeout=2)
        assert time.monotonic() - started < 5


@contextmanager
def answering(reply: bytes):
    """A port on 127.0.0.1 that sends `reply` to each connection and closes it."""
    def send(conn):
        with conn:
            conn.sendall(reply)
    with listening(send) as port:
        yield port


@pytest.mark.parametrize("reply", [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                                   struct.pack("Q", 2**31) + b"\0" * 64], ids=["http", "a-2-GiB-frame"])
def test_a_port_answering_something_else_is_not_a_dask_scheduler(reply):
    """Dask would take the first 8 bytes as a frame's size and allocate it (3 EiB for HTTP)."""
    with answering(reply) as port:
        with pytest.raises(SchedulerUnreachable, match=f"--cluster tcp://127.0.0.1:{port}: not a Dask scheduler"):
            probe(f"tcp://127.0.0.1:{port}", None, "--cluster", timeout=5)


def test_a_refused_port_is_said_as_refused():
    # refused; or, where each connect attempt outlasts Dask's share of the time (seen in the
    # brand-new root of `make test-fresh`), said as timed out: never a bare CancelledError
    with pytest.raises(SchedulerUnreachable, match="within 6 s: (Connection refused|each attempt timed out)$"):
        probe(f"tcp://127.0.0.1:{free_port()}", None, "--scheduler", timeout=6)


def test_a_refusal_under_dasks_last_retry_is_still_said():
    """Dask's last attempt can end cancelled by its timeout, the refusal further down."""
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as refused:
            try:
                raise asyncio.CancelledError() from refused
            except asyncio.CancelledError as cancelled:
                raise OSError("Timed out trying to connect") from cancelled
    except OSError as e:
        assert _first_cause(e) == "Connection refused"
    assert _first_cause(OSError("Timed out")) == "Timed out"


@pytest.mark.parametrize("text", ["", "127.0.0.1:8786", "http://127.0.0.1:8786", "tcp://127.0.0.1:notaport",
                                  "tcp://127.0.0.1:", "tcp://127.0.0.1:0", "tcp://127.0.0.1:65536",
                                  "tcp://127.0.0.1:٨٧٨٦", "tcp://127.0.0.1:８７８６", "tcp://:8786"])
def test_a_scheduler_address_is_checked_as_text(text):
    with pytest.raises(UsageError, match="--cluster") as e:
        checked_address(text, "--cluster")
    assert "\n" not in str(e.value)


def test_good_addresses_pass():
    assert checked_address("tcp://127.0.0.1:8786", "--cluster") == "tcp://127.0.0.1:8786"
    assert checked_address("tls://[::1]:1", "--cluster") == "tls://[::1]:1"


def _plugpull(*argv, env=None) -> subprocess.CompletedProcess:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return subprocess.run([sys.executable, "-m", "plugpull", *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": root, **(env or {})})


def test_a_worker_with_no_scheduler_ends_in_one_line(tmp_path):
    started = time.monotonic()
    done = _plugpull("worker", "--scheduler", f"tcp://127.0.0.1:{free_port()}", "--workdir", str(tmp_path / "w"),
                     env={"PLUGPULL_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 3, done.stderr
    # refused, or (on a loaded machine) each attempt timed out before it was refused
    assert re.search(r"no Dask scheduler reached within 10 s: (Connection refused|each attempt timed out)$",
                     done.stderr.strip()), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert time.monotonic() - started < 40
    assert not (tmp_path / "w").exists()


def test_crash_against_a_silent_listener_ends_in_one_line(tmp_path):
    with silent_listener() as port:
        started = time.monotonic()
        done = _plugpull("crash", "--cluster", f"tcp://127.0.0.1:{port}", "--out", str(tmp_path / "out"),
                         env={"PLUGPULL_CACHE": str(tmp_path / "cache")})
        took = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    assert "no Dask scheduler answered within 10 s" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert took < 40 and not (tmp_path / "out").exists()


# --- a lost worker -------------------------------------------------------------------------

def test_a_lost_worker_is_named():
    from distributed.client import FutureCancelledError
    error = FutureCancelledError("plugpull-check-1", reason="already forgotten")
    said = lost_message("tcp://127.0.0.1:8786", {"tcp://127.0.0.1:4001"}, set(), error)
    assert "lost worker tcp://127.0.0.1:4001 in the middle of the check" in said and "0 worker(s) left" in said
    two = lost_message("tcp://s:1", {"tcp://a:1", "tcp://b:1", "tcp://c:1"}, {"tcp://c:1"}, error)
    assert "lost workers tcp://a:1, tcp://b:1" in two and "1 worker(s) left" in two
    assert "lost a worker" in lost_message("tcp://s:1", {"tcp://a:1"}, None, error)
    hunt = lost_message("tcp://s:1", {"tcp://a:1"}, set(), error, hunt=True)
    assert "in the middle of the hunt" in hunt and "run the hunt again" in hunt and "check" not in hunt


# --- a dead worker's leftovers ---------------------------------------------------------------

def _leftovers(root, pid: int) -> list:
    made = [root / "states" / f"{pid}-140001" / "state-00001.img", root / "dask" / str(pid) / "dask-scratch-space"
            / "worker-x.dirlock", root / "records" / f".{'ab' * 8}.{pid}.7" / "part"]
    for path in made:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    (root / f"{wd.MARKER}{pid}").write_text("")
    return made


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_dead_workers_leftovers_are_swept_and_nothing_else(tmp_path):
    root = tmp_path / "w"
    dead = _dead_pid()
    _leftovers(root, dead)
    theirs = [root / "notes.txt", root / "states" / "mine.img", root / "records" / ("cd" * 8) / "record.json",
              root / "dask" / "shared.txt", root / "states" / f"{dead}-notanumber"]
    for path in theirs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("keep")
    with wd.worker_dir(root) as mine:
        assert mine.pid == os.getpid() and (root / f"{wd.MARKER}{os.getpid()}").is_file()
        assert not (root / "states" / f"{dead}-140001").exists() and not (root / "dask" / str(dead)).exists()
        assert not list((root / "records").glob(f".*.{dead}.*")) and not (root / f"{wd.MARKER}{dead}").exists()
    assert all(path.read_text() == "keep" for path in theirs)
    assert not (root / f"{wd.MARKER}{os.getpid()}").exists()


def test_a_live_workers_files_are_not_swept(tmp_path):
    root = tmp_path / "w"
    root.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                             f"fd = os.open({str(root / (wd.MARKER + 'PID'))!r}.replace('PID', str(os.getpid())), "
                             "os.O_RDWR | os.O_CREAT)\nfcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\n"
                             "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == "held"
        made = _leftovers(root, live.pid)
        assert wd.sweep_dead(root) == []
        assert all(path.exists() for path in made)
    finally:
        live.kill()
        live.wait()
    assert (root / "states" / f"{live.pid}-140001") in wd.sweep_dead(root)


WORKER = """
import sys
from pathlib import Path
from types import SimpleNamespace
from plugpull.cluster.serve import run_worker
run_worker(sys.argv[1], Path(sys.argv[2]), SimpleNamespace(image=SimpleNamespace(key="img")),
           announce=lambda address: print("worker at", address, flush=True))
"""


def _started(argv: list, said: str, env: dict) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = proc.stdout.readline()
    assert line.startswith(said), line
    return proc, line.split()[-1]


def test_a_sigkilled_workers_leftovers_are_swept_by_the_next_worker(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = {**os.environ, "PYTHONPATH": root, "PLUGPULL_CACHE": str(tmp_path / "cache")}
    work = tmp_path / "w"
    work.mkdir()
    (work / "notes.txt").write_text("keep")
    procs = []
    try:
        scheduler, address = _started([sys.executable, "-m", "plugpull", "scheduler", "--port", "0"],
                                      "scheduler at", env)
        procs.append(scheduler)
        first, _ = _started([sys.executable, "-c", WORKER, address, str(work)], "worker at", env)
        procs.append(first)
        state = work / "states" / f"{first.pid}-1" / "state-00000.img"
        state.parent.mkdir(parents=True)
        state.write_bytes(b"x")
        assert (work / f"{wd.MARKER}{first.pid}").is_file() and (work / "dask" / str(first.pid)).is_dir()
        first.kill()
        first.wait()
        second, _ = _started([sys.executable, "-c", WORKER, address, str(work)], "worker at", env)
        procs.append(second)
        assert not state.parent.exists() and not (work / "dask" / str(first.pid)).exists()
        assert not (work / f"{wd.MARKER}{first.pid}").exists() and (work / "notes.txt").read_text() == "keep"
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
