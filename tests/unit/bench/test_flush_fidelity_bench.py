"""bench/flush_fidelity.py end to end: bad input is refused before any guest boots, and a
small recording shows the bound docs/flush-order.md states (no write in flight across a flush)."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "flush_fidelity.py"


def run_bench(*args, timeout=None):
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args, message", [
    (["--fs", "zfs"], "unknown filesystem"),
    (["--workload", "nope"], "unknown workload"),
    (["--param", "fsync-files.count"], "bad --param"),
])
def test_bad_input_exits_2_with_one_line(args, message):
    out = run_bench(*args, timeout=60)
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert out.stdout == ""


@pytest.mark.vm
def test_no_write_crosses_a_flush_on_a_small_recording():
    out = run_bench("--fs", "xfs", "--workload", "fsync-files", "--param", "fsync-files.count=20", timeout=600)
    assert out.returncode == 0, out.stderr
    row = next(line.split() for line in out.stdout.splitlines() if line.startswith("xfs "))
    flushes, logged_flushes, writes, logged_writes, deepest, across, during = map(int, row[2:9])
    assert flushes >= 20 and logged_flushes <= flushes
    assert writes == logged_writes > 0
    assert (across, during) == (0, 0)
    assert deepest >= 1
