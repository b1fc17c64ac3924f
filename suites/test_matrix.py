"""The matrix runner end to end on a small matrix: both measurements per cell, results as JSON
lines, a rerun that skips what is done, a truncated line recomputed, the report rendered."""

import json

import pytest

from plugpull.crash.spec import CrashSpec
from plugpull.report import report
from plugpull.results import read_cells
from plugpull.runs.matrix import cells, done_keys, run_matrix
from plugpull.runs.settings import DEFAULT_MODEL

pytestmark = [pytest.mark.vm, pytest.mark.slow]


def test_matrix_measures_resumes_and_reports(rig, tmp_path):
    base = CrashSpec(models=(DEFAULT_MODEL,), states=6, trigger="end")
    todo = cells(base, ["xfs"], ["barrier", "nobarrier"], ["fsync-files"], {"fsync-files": {"count": 30}})
    results = tmp_path / "results.jsonl"
    ran = run_matrix(todo, results, rig, tmp_path / "work")
    assert [r.mode for r in ran] == ["barrier", "nobarrier"]
    for r in ran:
        assert not r.error, r.error
        phase = r.throughput.phases[0]
        assert phase.ops == 30 and phase.seconds > 0
        assert r.crash.states == 6
        assert r.env.accel == str(rig.accel) and "hdd" in r.env.disk_profile
    by_mode = {r.mode: r for r in ran}
    assert by_mode["barrier"].crash.clean == 6
    assert by_mode["nobarrier"].crash.clean < 6
    assert by_mode["nobarrier"].throughput.queue_write_cache == "write through"
    assert read_cells(results) == (ran, [])

    assert run_matrix(todo, results, rig, tmp_path / "work") == []

    lines = results.read_text().splitlines()
    results.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    assert done_keys(results) == {todo[0].key()}
    redone = run_matrix(todo, results, rig, tmp_path / "work")
    assert [r.mode for r in redone] == ["nobarrier"]
    assert json.loads(results.read_text().splitlines()[-1])["mode"] == "nobarrier"

    paths = report(results, tmp_path / "report")
    assert paths["png"].read_bytes().startswith(b"\x89PNG")
    assert "nobarrier" in paths["html"].read_text()
