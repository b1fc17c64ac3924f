"""The matrix runner end to end on a small matrix: both measurements per cell, results as JSON
lines, a rerun that skips what is done, a truncated line recomputed, the report rendered."""

import json

import pytest

from plugpull.lab.matrix import cells, load_done, run_matrix
from plugpull.report import report

pytestmark = [pytest.mark.vm, pytest.mark.slow]


def test_matrix_measures_resumes_and_reports(rig, tmp_path):
    todo = cells(["xfs"], ["barrier", "nobarrier"], ["fsync-files"], {"fsync-files": {"count": 30}},
                 states=6, trigger="end")
    results = tmp_path / "results.jsonl"
    docs = run_matrix(todo, results, rig, tmp_path / "work")
    assert [d["mode"] for d in docs] == ["barrier", "nobarrier"]
    for d in docs:
        assert not d.get("error"), d.get("error")
        phase = d["throughput"]["phases"][0]
        assert phase["ops"] == 30 and phase["seconds"] > 0
        assert d["crash"]["states"] == 6
        assert d["env"]["accel"] == str(rig.accel) and "hdd" in d["env"]["disk_profile"]
    by_mode = {d["mode"]: d for d in docs}
    assert by_mode["barrier"]["crash"]["summary"]["clean"] == 6
    assert by_mode["nobarrier"]["crash"]["summary"]["clean"] < 6
    assert by_mode["nobarrier"]["throughput"]["queue_write_cache"] == "write through"

    assert run_matrix(todo, results, rig, tmp_path / "work") == []

    lines = results.read_text().splitlines()
    results.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    assert load_done(results) == {todo[0].key()}
    redone = run_matrix(todo, results, rig, tmp_path / "work")
    assert [d["mode"] for d in redone] == ["nobarrier"]
    assert json.loads(results.read_text().splitlines()[-1])["mode"] == "nobarrier"

    paths = report(results, tmp_path / "report")
    assert paths["png"].read_bytes().startswith(b"\x89PNG")
    assert "nobarrier" in paths["html"].read_text()
