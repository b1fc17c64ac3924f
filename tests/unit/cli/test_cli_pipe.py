"""plugpull's output piped into a reader that stops early (`| head`): it ends quietly, exit 0.
SIGPIPE stays ignored, so a broken pipe that is not stdout is an error like any other. No VM."""

import subprocess
import sys

from plugpull.paths import ROOT


def test_a_reader_that_stops_early_ends_plugpull_quietly():
    cmd = f"{sys.executable} -m plugpull generate --seq 2 --list | head -1; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("seq2-000000") and done.stderr == ""


def test_sigpipe_is_not_left_to_kill_plugpull():
    code = "import signal; from plugpull import cli; cli.main(['generate', '--seq', '1', '--list']); " \
           "print(signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN, file=__import__('sys').stderr)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().endswith("True")


def test_a_closed_stdout_is_a_failure_said_not_a_silent_success():
    """`>&-`: Python would print nothing and end 0; plugpull ends with exit 3 and says why."""
    cmd = f"{sys.executable} -m plugpull generate --seq 1 --list >&-"
    done = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and done.stderr.count("\n") == 1 and "stdout is closed" in done.stderr, done.stderr
