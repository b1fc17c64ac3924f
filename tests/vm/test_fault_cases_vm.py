"""A case file's [faults] table through `plugpull reproduce`: one fault run (ext4,
error-writes from the first ack for 3 s, fsync-retry), saved as a result line the report renders."""

import json

import pytest

from plugpull.cli import main

pytestmark = pytest.mark.vm
VERDICTS = '["clean", "error-reported", "silent-loss", "fs-shutdown", "fs-corrupt", "unmountable", "kernel-crash"]'
CASE = f"""
title = "one fault run"
[faults]
fs = ["ext4"]
kinds = ["error-writes"]
trigger = "acks:1"
window = 3
workloads = ["fsync-retry"]
[workload.fsync-retry]
size_kib = 64
wait = 20
[[expect.faults]]
verdicts = {VERDICTS}
"""


def test_a_faults_case_runs_and_its_result_file_renders(tmp_path, accel, capsys):
    case, results, report = tmp_path / "case.toml", tmp_path / "r.jsonl", tmp_path / "rep"
    case.write_text(CASE)
    assert main(["reproduce", "--accel", str(accel), str(case), "--results", str(results),
                 "--report", str(report)]) == 0, "judged, with a verdict that is no harness failure"
    [line] = [json.loads(text) for text in results.read_text().splitlines()]
    assert line["kind"] == "fault" and line["fs"] == "ext4" and line["fault"] == "error-writes@acks:1+3"
    assert "error_writes" in line["table"] and line["status"].endswith(" flakey"), "dm-flakey evidence"
    assert [what for _, what in line["switched"]] == ["on", "off"]
    assert sum(line["errnos"][s].get("EIO", 0) for s in ("write", "fsync", "close")) >= 1, line["told"]
    page = (report / "report.html").read_text()
    assert "<h2>Device faults</h2>" in page and "faults / fsync-retry" in page and line["verdict"] in page
    out = capsys.readouterr().out
    assert "error-writes@acks:1+3" in out and str(report / "report.html") in out
