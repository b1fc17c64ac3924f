"""bench/f2fs_first_fsync.py: bad input is refused before any guest boots, and the state it
mounts holds exactly the writes dm-log-writes logged before the mark."""

import subprocess
import sys
from pathlib import Path

import pytest
from tests.bench_module import load_bench

from plugpull.errors import InfraError
from plugpull.powerloss.writelog import LogWriter

BENCH = Path(__file__).resolve().parents[3] / "bench" / "f2fs_first_fsync.py"


@pytest.mark.parametrize("args, message", [(["--runs", "0"], "--runs"), (["--variant", "third"], "--variant")])
def test_bad_input_exits_2(args, message):
    out = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert message in out.stderr


def test_the_state_holds_the_writes_logged_before_the_mark_only(tmp_path):
    log = tmp_path / "log.img"
    with LogWriter(log) as w:
        w.write(0, b"\x43" * 4096)
        w.flush()
        w.mark("setup")
        w.write(8, b"\x61" * 4096)
        w.flush()
        w.mark("fsynced")
        w.write(16, b"\x62" * 4096)   # the node block, covered by no flush before the mark
        w.flush()
    image = tmp_path / "state.img"
    assert load_bench("f2fs_first_fsync").state_at_mark(log, image) == 1
    data = image.read_bytes()
    assert data[:4096] == b"\x43" * 4096 and data[4096:8192] == b"\x61" * 4096
    assert data[8192:12288] == bytes(4096)
    assert len(data) == 64 << 20


def test_a_log_without_the_mark_is_refused(tmp_path):
    log = tmp_path / "log.img"
    with LogWriter(log) as w:
        w.write(0, b"\x43" * 4096)
    with pytest.raises(InfraError, match="no mark"):
        load_bench("f2fs_first_fsync").state_at_mark(log, tmp_path / "state.img")


@pytest.mark.vm
def test_a_few_runs_give_a_size_each():
    out = subprocess.run([sys.executable, str(BENCH), "--variant", "second", "--runs", "2"],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    found = [line.split()[3:8] for line in out.stdout.splitlines() if line.startswith("run ")]
    assert found == [["20480", "bytes,", "first", "byte", "43"]] * 2
