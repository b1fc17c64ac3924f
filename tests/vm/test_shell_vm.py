"""`plugpull shell` as a user runs it: a script piped in, no input at all, and keys typed at a
terminal before the guest is up. Each input reaches the guest's shell whole, and each session
returns with its guest gone. A generous bound on each run turns a hang into a failure."""

import os
import pty
import select
import subprocess
import sys

import pytest

from plugpull.paths import ROOT

pytestmark = pytest.mark.vm

BOUND = 900  # seconds; a session that hangs fails here instead of holding the run


def shell_argv(pytestconfig, accel) -> list[str]:
    argv = [sys.executable, "-m", "plugpull", "shell", "--accel", str(accel)]
    for option in ("kernel", "modules"):
        if pytestconfig.getoption(option):
            argv += [f"--{option}", str(pytestconfig.getoption(option))]
    return argv


@pytest.mark.parametrize("given, printed", [(b"uname -r\nexit\n", "release"), (b"", "")], ids=["script", "nothing"])
def test_piped_input_runs_whole_and_its_end_ends_the_session(pytestconfig, image, accel, given, printed):
    done = subprocess.run(shell_argv(pytestconfig, accel), input=given, capture_output=True, cwd=ROOT,
                          timeout=BOUND, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == (f"{image.kernel_release}\n" if printed else "")


def test_keys_typed_at_a_terminal_during_boot_reach_the_shell_whole(pytestconfig, image, accel):
    """Typed before the guest is up: the first keys used to be lost (`e -r: not found`)."""
    master, terminal = pty.openpty()
    session = subprocess.Popen(shell_argv(pytestconfig, accel), stdin=terminal, stdout=terminal, stderr=terminal,
                               cwd=ROOT, start_new_session=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.close(terminal)
    os.write(master, b"uname -r\nexit\n")
    seen = bytearray()
    try:
        while select.select([master], [], [], BOUND)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # every end of the terminal closed: the session is over
                break
            if not chunk:
                break
            seen += chunk
        assert session.wait(timeout=BOUND) == 0, seen.decode(errors="replace")
    finally:
        session.kill()
        os.close(master)
    lines = seen.decode(errors="replace").replace("\r", "").split("\n")
    assert image.kernel_release in lines and "not found" not in seen.decode(errors="replace"), lines
