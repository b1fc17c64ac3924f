"""A guest's process dies with plugpull, not with the thread that started it. No VM: `sleep`
stands in for QEMU."""

import os
import signal
import subprocess
import threading
import time

from plugpull.guest.qemu.process import die_with_parent, spawn


def started_on_a_thread_that_ends(start) -> subprocess.Popen:
    procs = []
    thread = threading.Thread(target=lambda: procs.append(start(["sleep", "60"])))
    thread.start()
    thread.join()
    return procs[0]


def gone_within(proc: subprocess.Popen, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return True
        time.sleep(0.02)
    return False


def test_a_child_spawned_from_a_thread_outlives_that_thread():
    proc = started_on_a_thread_that_ends(lambda argv: spawn(argv, stdin=subprocess.DEVNULL))
    try:
        assert not gone_within(proc, 1.0)
    finally:
        proc.kill()
        proc.wait()


def test_the_parent_death_signal_alone_kills_it_with_the_thread():
    """Why `spawn` exists: the same child started straight from the thread dies with it."""
    proc = started_on_a_thread_that_ends(lambda argv: subprocess.Popen(argv, preexec_fn=die_with_parent))
    try:
        assert gone_within(proc, 5.0) and proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
