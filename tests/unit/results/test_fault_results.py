"""Fault runs as results: they survive JSON, old `faults --json` files still read, newer
ones are refused, and the report renders them (a silent-loss count shown as unsafe)."""

import json

import pytest

from plugpull.report import report, report_main
from plugpull.report.faults import fault_tables, render_faults
from plugpull.report.html import html_page
from plugpull.results import SCHEMA_VERSION, FaultResult, append_line, read_cells, read_faults
from plugpull.results.faults import fault_key

TOLD = {"acks": [1, 3], "errors": [[2, "fsync", "EIO"], [3, "close", "EIO"]], "wrong": [], "exit_code": 0}
SPEC = {"kind": "error-writes", "trigger": "acks:1", "window": 3.0, "seed": 1, "up": 0, "down": 0}


def fault_run(fs="ext4", fault="error-writes@acks:1+3", verdict="silent-loss", run=0, told=TOLD, **more):
    params = {"size_kib": 64, "wait": 20}
    return FaultResult(fault_key(fs, fault, "fsync-retry", params, run), fs, fault, "fsync-retry", verdict,
                       reason="1 acknowledged operations lost", params=params, spec=SPEC, run=run, told=told,
                       table="0 131072 flakey 8:0 0 0 1 1 error_writes", status="0 131072 flakey",
                       switched=((1.2, "on"), (4.3, "off")), version_after=1, seconds=21.5,
                       kernel="6.1.0-56-amd64", started="2026-11-20T23:00:00Z", **more)


SILENT = fault_run()
REPORTED = fault_run(verdict="error-reported", run=1, told={"acks": [1], "errors": [[2, "fsync", "EIO"]]})
CLEAN = fault_run("xfs", "corrupt-reads@acks:1+3", "clean", told={"acks": [1, 2], "errors": []})
# A run exactly as `plugpull faults --json` wrote it before schema 5: no schema, key, run or spec.
OLD_JSON = {"kernel": "6.1.0-56-amd64", "runs": [
    {"fs": "ext4", "fault": "error-writes@acks:1+3", "workload": "fsync-retry", "params": {"size_kib": 64},
     "verdict": "silent-loss", "reason": "lost", "told": TOLD, "table": "t", "status": "s",
     "switched": [[1.2, "on"], [4.3, "off"]], "shutdown": "", "version_after": 1, "corruption": "",
     "corruption_evidence": "", "power_loss": {}, "seconds": 21.5},
    {"fs": "ext4", "fault": "error-writes@acks:1+3", "workload": "fsync-retry", "params": {"size_kib": 64},
     "verdict": "error-reported", "reason": "told", "told": {"acks": [1], "errors": [[2, "fsync", "EIO"]]}}]}


@pytest.mark.parametrize("value", [SILENT, REPORTED, CLEAN, FaultResult("k", "xfs", "drop-writes", "w", "infra-error")],
                         ids=lambda v: v.verdict)
def test_a_fault_run_survives_json(value):
    doc = json.loads(json.dumps(value.to_json()))
    assert doc["schema"] == SCHEMA_VERSION == 5 and doc["kind"] == "fault"
    assert FaultResult.from_json(doc) == value


def test_a_fault_line_carries_the_errno_counts_and_the_dm_evidence():
    doc = SILENT.to_json()
    assert doc["errnos"] == {"write": {}, "fsync": {"EIO": 1}, "close": {"EIO": 1}}
    assert "error_writes" in doc["table"] and doc["spec"]["kind"] == "error-writes"
    assert doc["key"] == "ext4/error-writes@acks:1+3/fsync-retry/size_kib=64/wait=20#0"


def test_fault_lines_sit_beside_cells_and_the_last_line_of_a_key_wins(tmp_path):
    path = tmp_path / "r.jsonl"
    cell = {"schema": 4, "kind": "cell", "key": "k", "fs": "xfs", "mode": "barrier", "workload": "fsync-files"}
    for doc in (cell, SILENT.to_json(), REPORTED.to_json(), {**SILENT.to_json(), "verdict": "clean"}):
        append_line(path, doc)
    runs, warnings = read_faults(path)
    assert warnings == [] and [r.verdict for r in runs] == ["clean", "error-reported"]
    assert [c.key for c in read_cells(path)[0]] == ["k"]


def test_an_old_faults_json_file_still_reads(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(OLD_JSON, indent=1))
    runs, warnings = read_faults(path)
    assert warnings == [] and [(r.run, r.verdict, r.kernel) for r in runs] == [
        (0, "silent-loss", "6.1.0-56-amd64"), (1, "error-reported", "6.1.0-56-amd64")]
    assert runs[0].errnos("fsync") == {"EIO": 1} and runs[0].switched == ((1.2, "on"), (4.3, "off"))


def test_a_newer_or_broken_fault_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "r.jsonl"
    newer = {**SILENT.to_json(), "schema": SCHEMA_VERSION + 1}
    nameless = {**REPORTED.to_json(), "verdict": None}
    path.write_text("\n".join(json.dumps(d) for d in (newer, nameless, CLEAN.to_json())) + "\n{\"kind\": \"fau")
    runs, warnings = read_faults(path)
    assert [r.verdict for r in runs] == ["clean"]
    assert len(warnings) == 3 and f"schema {SCHEMA_VERSION + 1} is newer" in warnings[0]
    assert "without verdict" in warnings[1] and "not valid JSON" in warnings[2]


def test_the_fault_table_puts_the_errnos_beside_each_verdict_and_marks_silent_loss():
    [table] = fault_tables([SILENT, REPORTED, CLEAN])
    assert table.title == "faults / fsync-retry  (size_kib=64 wait=20)"
    rows = {(r[0].value, r[1].value): dict(zip(table.header, r)) for r in table.rows}
    ext4 = rows[("ext4", "error-writes@acks:1+3")]
    assert ext4["runs"].value == "2"
    assert ext4["silent-loss"].value == "1 (fsync EIO:1, close EIO:1)" and ext4["silent-loss"].bad
    assert ext4["error-reported"].value == "1 (fsync EIO:1)" and not ext4["error-reported"].bad
    xfs = rows[("xfs", "corrupt-reads@acks:1+3")]
    assert xfs["clean"].value == "1" and not xfs["silent-loss"].bad and xfs["silent-loss"].value == "0"
    assert "after power loss" not in table.header and "unmountable" not in table.header


def test_the_power_cut_column_and_rarer_verdicts_appear_when_a_run_has_them():
    cut = fault_run("xfs", "drop-writes", "unmountable", power_loss={"prefix": {"clean": 2, "data-loss": 1}})
    [table] = fault_tables([SILENT, cut])
    row = dict(zip(table.header, table.rows[1]))
    assert row["after power loss"].value == "prefix clean:2 data-loss:1"
    assert row["unmountable"].bad and dict(zip(table.header, table.rows[0]))["after power loss"].value == "-"
    assert render_faults([SILENT, cut]).count("EIO:1)!") == 2


def test_the_page_shows_a_fault_section_only_when_there_are_fault_runs():
    page = html_page([], None, (), [SILENT, CLEAN])
    assert "<h2>Device faults</h2>" in page and ('<td class="bad"><a href="faults.html#fsync-retry-size_kib_64-wait_20'
                                                 '-ext4-error-writes_acks_1_3-silent-loss">1 (fsync EIO:1, close EIO:1)</a></td>') in page
    assert "<dt>silent-loss</dt>" in page and "Cost against risk" not in page and "data:image/png" not in page
    assert "Device faults" not in html_page([], None, ())


def test_report_renders_a_results_file_of_fault_runs_alone(tmp_path, capsys):
    results = tmp_path / "faults.jsonl"
    for run in (SILENT, CLEAN):
        append_line(results, run.to_json())
    paths = report(results, tmp_path / "rep")
    assert sorted(paths) == ["faults", "html", "txt"] and "silent-loss" in paths["txt"].read_text()
    assert report_main(tmp_path, None) == 0  # a directory: every *.jsonl in it
    out = capsys.readouterr().out
    assert "faults / fsync-retry" in out and (tmp_path / "report" / "report.html").is_file()
    assert '<td class="bad">' in (tmp_path / "report" / "report.html").read_text()


def test_each_count_of_runs_that_are_not_clean_opens_them_with_their_evidence(tmp_path):
    from plugpull.report.links import broken_links

    results = tmp_path / "faults.jsonl"
    again = fault_run(run=2, told={"acks": [1, 2, 3], "errors": [], "wrong": ["4 /mnt/f 0"], "exit_code": 0})
    for run in (SILENT, REPORTED, CLEAN, again):
        append_line(results, run.to_json())
    paths = report(results, tmp_path / "rep")
    main, runs = paths["html"].read_text(), paths["faults"].read_text()
    anchor = "fsync-retry-size_kib_64-wait_20-ext4-error-writes_acks_1_3-silent-loss"
    assert f'<a href="faults.html#{anchor}">2 (fsync EIO:1, close EIO:1)</a>' in main
    assert f'<a href="faults.html#{anchor.replace("silent-loss", "error-reported")}">1 (fsync EIO:1)</a>' in main
    section = runs[runs.index(f'<section id="{anchor}">'):]
    section = section[:section.index("</section>")]
    assert section.count('<article class="state"') == 2 and "silent-loss, 2 runs" in section
    assert "<dt>errors told</dt><dd>op 2: fsync EIO; op 3: close EIO</dd>" in section
    assert "<dt>wrong reads</dt><dd>4 /mnt/f 0</dd>" in section and "error_writes" in section
    assert "xfs" not in runs  # the clean run is counted, not listed
    assert broken_links(tmp_path / "rep") == []


def test_report_with_cells_and_faults_renders_both(tmp_path):
    from tests.unit.report.test_report import LINES

    results = tmp_path / "both.jsonl"
    results.write_text("\n".join(LINES) + "\n")
    append_line(results, SILENT.to_json())
    page = report(results, tmp_path / "rep")["html"].read_text()
    assert "Throughput and crash states" in page and "<h2>Device faults</h2>" in page


def test_a_run_in_memory_keeps_its_switches_and_errors():
    """FaultRun.to_json holds tuples, not yet through JSON: they are kept all the same."""
    doc = {**OLD_JSON["runs"][0], "switched": [(1.2, "on"), (4.3, "off")],
           "told": {"errors": [(2, "fsync", "EIO")]}}
    run = FaultResult.from_json(doc)
    assert run.switched == ((1.2, "on"), (4.3, "off")) and run.errnos("fsync") == {"EIO": 1}


def test_a_faults_json_document_of_today_reads_as_its_runs(tmp_path):
    path = tmp_path / "today.json"
    path.write_text(json.dumps({"schema": SCHEMA_VERSION, "kind": "faults", "kernel": "k",
                                "runs": [SILENT.to_json(), REPORTED.to_json()]}, indent=1))
    runs, warnings = read_faults(path)
    assert warnings == [] and runs == [SILENT, REPORTED]
    path.write_text(json.dumps({"schema": SCHEMA_VERSION + 1, "kind": "faults", "runs": []}))
    assert "is newer" in read_faults(path)[1][0]
