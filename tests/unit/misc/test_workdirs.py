"""The sweep of dead runs' scratch removes what those runs made, and nothing else."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plugpull.workdirs import MARK, make_workdir, owner_dead, sweep_stale_workdirs, this_owner


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))


def made_by_a_dead_run(out: Path) -> Path:
    """A work dir made by another plugpull process, which then died without cleaning up."""
    code = "import sys; from plugpull.workdirs import make_workdir; print(make_workdir(sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    return Path(done.stdout.strip())


def test_a_dead_runs_scratch_goes_with_the_out_dir_it_made(tmp_path):
    results = tmp_path / "results"
    dead = made_by_a_dead_run(results / "crash-old")
    (dead / "states").mkdir()
    logged = made_by_a_dead_run(results / "crash-logged")
    (logged.parent / "crash.log").write_text("the killed run's log\n")

    work = make_workdir(results / "crash-new")
    assert work.parent == results / "crash-new" and (work / MARK).is_file()
    assert not (results / "crash-old").exists(), "an out dir the dead run made, left empty, goes"
    assert not logged.exists() and (logged.parent / "crash.log").is_file()
    assert sweep_stale_workdirs() == []


def test_a_live_runs_scratch_stays(tmp_path):
    live = make_workdir(tmp_path / "busy")
    make_workdir(tmp_path / "other")
    assert live.is_dir()


def test_user_data_named_like_scratch_is_never_touched(tmp_path):
    """A sibling or parent of the out dir, a directory with no marker, a marker of another
    machine: none is plugpull's to remove."""
    notes = tmp_path / "d" / "userdata" / ".work-4000000" / "notes.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("mine\n")
    unmarked = tmp_path / "d" / "newhunt" / ".work-4000001"
    unmarked.mkdir(parents=True)
    foreign = tmp_path / "d" / "newhunt" / ".work-4000002-x"
    foreign.mkdir()
    (foreign / MARK).write_text(json.dumps({**this_owner(), "host": "another-machine", "pid": 4000002}))

    make_workdir(tmp_path / "d" / "newhunt")
    assert notes.read_text() == "mine\n"
    assert unmarked.is_dir() and foreign.is_dir()


def test_a_run_that_did_not_make_its_out_dir_leaves_it(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    made_by_a_dead_run(out)
    sweep_stale_workdirs()
    assert out.is_dir() and list(out.iterdir()) == []


def test_owner_dead_tells_a_reused_pid_from_its_owner():
    me = this_owner()
    assert not owner_dead(me)
    assert owner_dead({**me, "start": "0"}), "another process with the same pid is not the owner"
    assert owner_dead({**me, "boot": "an-earlier-boot"})
    assert not owner_dead({**me, "host": "elsewhere", "boot": "x"})
    assert not owner_dead(None) and not owner_dead({"pid": "1"})
