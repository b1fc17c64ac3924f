"""`plugpull scheduler` leaves nothing in $TMPDIR when it stops: Dask's scratch space is a
temp dir of plugpull's own, removed at SIGTERM (and by a later run after a SIGKILL). No VM."""

import os
import signal
import subprocess
import sys

from plugpull.paths import ROOT


def test_a_stopped_scheduler_leaves_no_scratch_space(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path), "PLUGPULL_CACHE": str(tmp_path / "cache")}
    scheduler = subprocess.Popen([sys.executable, "-m", "plugpull", "scheduler", "--port", "0"], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert scheduler.stdout.readline().startswith("scheduler at tcp://127.0.0.1:")
        while_up = os.listdir(tmp_path)
        assert any(name.startswith("plugpull-") for name in while_up), while_up
    finally:
        scheduler.send_signal(signal.SIGTERM)
        scheduler.communicate(timeout=60)
    assert sorted(os.listdir(tmp_path)) == [], os.listdir(tmp_path)
