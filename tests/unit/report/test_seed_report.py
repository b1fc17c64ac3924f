"""The seeds side by side, and the cause columns, rendered from a results file made by hand;
a case file whose [seed] table is malformed is refused with the field named."""

import json

import pytest

from tests.case_files import write_case
from plugpull import cli
from plugpull.report import report
from plugpull.report.cause import predicted_ratio
from plugpull.report.seeds import render_seeds
from plugpull.report.tables import render_table
from plugpull.results import read_cells

SEED = {"name": "seed 003", "figures": [
    {"workload": "smallfiles", "phase": "sequential create", "mode": "barrier", "rate": 52.87, "line": 41,
     "quote": "#1 sequential create : 4728.878 seconds (52.87 op/s)."},
    {"workload": "smallfiles", "phase": "sequential create", "mode": "nobarrier", "rate": 645.78, "line": 33,
     "quote": "#1 sequential create : 387.128 seconds (645.78 op/s)."},
]}


def cell(mode: str, seconds: float, flushes: int, flush_ms: int, sectors: int, seed=SEED) -> dict:
    io = {"writes": 10, "sectors": sectors, "flushes": flushes, "flush_ms": flush_ms, "seconds": seconds,
          "device": "sda"}
    phase = {"name": "sequential create", "seconds": seconds, "ops": 1000, "io": io}
    return {"schema": 4, "kind": "cell", "key": f"xfs/{mode}/smallfiles/k", "fs": "xfs", "mode": mode,
            "workload": "smallfiles", "params": {"count": 1000}, "seed": seed,
            "throughput": {"phases": [phase], "profile": {"name": "hdd", "flush_ms": 10}, "io": io}}


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = [cell("barrier", 10.0, 200, 200, 4096), cell("nobarrier", 5.0, 0, 0, 4096)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def rows_of(text: str, title: str) -> list[list[str]]:
    block = text.split(title, 1)[1].split("\n\n", 1)[0]
    return [line.split() for line in block.strip().splitlines()]


def test_the_seed_section_sets_the_published_ratio_beside_plugpulls(results):
    text = render_seeds(read_cells(results)[0])
    header, barrier, nobarrier = rows_of(text, "seed 003 side by side (xfs)")
    assert header[:3] == ["workload", "phase", "mode"]
    # smallfiles  sequential create  MODE  seed  seed-vs  plugpull unit  plugpull-vs  predicted  f/kop  MiB/f  share
    assert barrier[3:] == ["barrier", "52.87", "x1.0", "100", "op/s", "x1.0", "-", "200.0", "0.01", "2.0%"]
    assert nobarrier[3:] == ["nobarrier", "645.78", "x0.08", "200", "op/s", "x0.50", "x0.69", "0.0", "-", "0.0%"]
    assert "[seed] table" in text


def test_the_predictor_adds_each_flush_its_profile_and_disk_cost(results):
    barrier, nobarrier = read_cells(results)[0]
    # nobarrier 5 ms/op; barrier 0.2 flushes/op x (10 ms profile + 1 ms the disk's own) = 2.2 ms/op
    assert predicted_ratio(nobarrier, barrier, "sequential create") == pytest.approx(5 / 7.2)
    assert predicted_ratio(barrier, barrier, "sequential create") is None
    assert predicted_ratio(nobarrier, None, "sequential create") is None


def test_the_matrix_table_carries_the_cause_columns(results):
    text = render_table(read_cells(results)[0])
    assert "predicted  flushes/kop  MiB/flush  flush time" in text
    assert "seed 003 side by side" in text and "predicted: nobarrier's time" in text


def test_whole_run_counters_are_marked(tmp_path):
    line = cell("barrier", 10.0, 200, 200, 4096)
    del line["throughput"]["phases"][0]["io"]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (_, barrier) = rows_of(render_seeds(read_cells(path)[0]), "seed 003 side by side (xfs)")[:2]
    assert barrier[-2:] == ["0.01*", "2.0%*"] and barrier[-3] == "-"  # no ops for the run as a whole


def test_no_seed_no_section_and_old_results_render_as_before(tmp_path):
    line = cell("barrier", 10.0, 200, 200, 4096, seed=None)
    del line["seed"], line["throughput"]["io"], line["throughput"]["phases"][0]["io"]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({**line, "schema": 3}) + "\n")
    cells = read_cells(path)[0]
    assert render_seeds(cells) == "" and "flushes/kop" not in render_table(cells)


def test_the_html_page_has_the_seed_section(results, tmp_path):
    html = report(results, tmp_path / "out")["html"].read_text()
    assert "The seeds side by side" in html and "seed 003 side by side (xfs)" in html and "x0.69" in html


CASE = """
title = "t"
[matrix]
fs = ["xfs"]
modes = ["barrier", "nobarrier"]
workloads = ["smallfiles"]
[seed]
name = "seed 003"
[[seed.figures]]
workload = "smallfiles"
phase = "sequential create"
mode = "barrier"
rate = 52.87
line = 41
quote = "OUCH"
"""


@pytest.mark.parametrize("change, field", [
    (("rate = 52.87", "rate = \"fast\""), "[seed] figures[0].rate"),
    (("rate = 52.87", "rate = -1.0"), "[seed] figures[0].rate"),
    (("line = 41", "line = 0"), "[seed] figures[0].line"),
    (("quote = \"OUCH\"", ""), "[seed] figures[0].quote"),
    (("mode = \"barrier\"", "mode = \"extlog\""), "[seed] figures[0].mode"),
    (("workload = \"smallfiles\"\nphase", "workload = \"bonnie\"\nphase"), "[seed] figures[0].workload"),
    (("rate = 52.87", "rate = 52.87\nseconds = 3.0"), "[seed] figures[0].seconds"),
    (("name = \"seed 003\"", "name = \"seed 003\"\ncolour = 1"), "[seed] colour"),
])
def test_a_malformed_seed_table_is_exit_2_naming_the_field(tmp_path, capsys, change, field):
    text = CASE.replace(*change)
    assert text != CASE
    path = write_case(tmp_path, text)
    assert cli.main(["reproduce", str(path), "--results", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.jsonl").exists()


def test_a_well_formed_seed_table_loads_and_leaves_the_keys_alone(tmp_path):
    from dataclasses import replace

    from plugpull.runs.cases import load_case
    case = load_case(write_case(tmp_path, CASE))
    assert case.seed["figures"][0]["rate"] == 52.87
    assert all(c.seed == case.seed for c in case.cells)
    assert case.cells[0].key() == replace(case.cells[0], seed=None).key()


def test_a_reference_run_puts_its_ratio_beside_this_runs(results, tmp_path, capsys):
    earlier = tmp_path / "ref.jsonl"
    lines = [cell("barrier", 20.0, 400, 400, 4096), cell("nobarrier", 5.0, 0, 0, 4096)]
    earlier.write_text("".join(json.dumps(line) + "\n" for line in lines))
    text = render_seeds(read_cells(results)[0], read_cells(earlier)[0])
    header, barrier, nobarrier = rows_of(text, "seed 003 side by side (xfs)")
    assert "reference" in header and "reference vs barrier" in text
    # ... plugpull-vs, reference-vs, predicted: this run x0.50, the reference x0.25
    assert nobarrier[8:11] == ["x0.50", "x0.25", "x0.69"] and barrier[8:10] == ["x1.0", "x1.0"]
    assert cli.main(["report", str(results), "--out", str(tmp_path / "o"), "--reference", str(earlier)]) == 0
    assert "x0.25" in capsys.readouterr().out
    assert cli.main(["report", str(results), "--reference", str(tmp_path / "none.jsonl")]) == 2


def test_the_reference_of_a_case_is_its_committed_results(tmp_path):
    from plugpull.runs.seedtable import reference_results
    (tmp_path / "cases").mkdir()
    (tmp_path / "results").mkdir()
    case = tmp_path / "cases" / "seed-x.toml"
    assert reference_results(case, tmp_path / "r.jsonl") is None
    committed = tmp_path / "results" / "seed-x.jsonl"
    committed.write_text("")
    assert reference_results(case, tmp_path / "r.jsonl") == committed.resolve()
    assert reference_results(case, committed) is None


def test_reproduce_no_crash_runs_the_throughput_side_alone(tmp_path, monkeypatch):
    import plugpull.cli.reproduce as reproduce_cli
    import plugpull.runs.matrix as runs_matrix
    ran = []
    monkeypatch.setattr(runs_matrix, "prepare_rig", lambda *a: None)
    monkeypatch.setattr(reproduce_cli, "finish_matrix", lambda *a: None)
    monkeypatch.setattr("plugpull.runs.caserun.run_matrix", lambda todo, *a, **kw: ran.extend(todo) or [])
    path = write_case(tmp_path, CASE + "[expect]\nunsafe = [\"barrier\"]\n")
    results = str(tmp_path / "r.jsonl")
    assert cli.main(["reproduce", str(path), "--results", results, "--no-crash"]) == 0
    assert [(c.mode, c.throughput, c.crash) for c in ran] == [("barrier", True, False), ("nobarrier", True, False)]
    ran.clear()
    assert cli.main(["reproduce", str(path), "--results", results]) == 1  # [expect]: no crash states seen
    assert all(c.crash for c in ran)
