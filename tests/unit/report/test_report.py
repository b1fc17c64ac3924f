"""The report on a matrix results file: loading, the table, the plot, the HTML page, the entry point."""

import base64
import json
import re

import pytest

from plugpull.report import report, report_main
from plugpull.report.html import render_html
from plugpull.report.plot import panels, render_plot
from plugpull.report.rates import mode_rank
from plugpull.report.tables import render_table
from plugpull.results import CrashSummary, read_cells

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

ENV = {"accel": "tcg", "qemu": "7.2.22", "kernel": "6.1.0-56-amd64",
       "packages": {"xfsprogs": "6.1.0-1", "e2fsprogs": "1.47.0-2"}, "host": "x86_64, 2 cores",
       "disk_backing": "raw file on the host's ext4; a guest flush = host fdatasync", "bus": "ahci"}


def tree_extract(extract_s, remove_s, files=2000):
    return {"phases": [{"name": "extract", "seconds": extract_s, "ops": files, "bytes": 20480000},
                       {"name": "remove", "seconds": remove_s, "ops": files, "bytes": None}],
            "recorder_overhead": 1.07}


def append(seconds):
    return {"phases": [{"name": "append", "seconds": seconds, "ops": None, "bytes": 2048000}],
            "recorder_overhead": 1.12}


def crash(clean, data_loss=0, fs_corrupt=0, unmountable=0, infra_error=0):
    summary = {"clean": clean, "data-loss": data_loss, "fs-corrupt": fs_corrupt,
               "unmountable": unmountable, "infra-error": infra_error}
    return {"states": sum(summary.values()), "models": ["reorder"], "summary": summary}


def line(fs, mode, workload, params, throughput, crash_result, started="2026-11-20T23:00:00Z"):
    tag = "ab12cd" if params == TREE else "5e0a9f"
    return json.dumps({"kind": "cell", "key": f"{fs}/{mode}/{workload}/{tag}",
                       "fs": fs, "mode": mode, "workload": workload, "params": params,
                       "throughput": throughput, "crash": crash_result, "env": ENV,
                       "started": started, "seconds": 41.2})


TREE, RECORDS = {"files": 2000}, {"records": 500}
LINES = [
    line("xfs", "barrier", "tree-extract", TREE, tree_extract(12.5, 3.2), crash(20)),
    line("xfs", "nobarrier", "tree-extract", TREE, tree_extract(2.5, 0.8), crash(9, 7, 3, 1)),
    line("xfs", "nocache", "tree-extract", TREE, tree_extract(40.0, 4.0), crash(20)),
    "",
    line("ext4", "barrier", "tree-extract", TREE, tree_extract(10.0, 2.0), crash(20)),
    line("ext4", "nobarrier", "tree-extract", TREE, tree_extract(4.0, 1.0), None),
    line("ext4", "nocache", "tree-extract", TREE, tree_extract(20.0, 2.5), crash(20)),
    line("ext4", "barrier", "fsync-append", RECORDS, append(9.9), crash(19, 1)),
    line("ext4", "nobarrier", "fsync-append", RECORDS, None, crash(12, 8)),
    line("ext4", "nocache", "fsync-append", RECORDS, append(3.2), crash(20)),
    line("ext4", "barrier", "fsync-append", RECORDS, append(6.4), crash(20), started="2026-11-21T01:10:00Z"),
    "",
]
TRUNCATED = '{"kind": "cell", "key": "xfs/barrier/fsync-append/77aa01", "fs": "xfs", "mode": "barr'
RESULTS = "\n".join(LINES) + TRUNCATED


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "matrix.jsonl"
    path.write_text(RESULTS)
    return path


def group_rows(table: str, title: str) -> dict[str, tuple[list[str], list[str]]]:
    """The rows under a group's title, by mode: (throughput cells, crash cells)."""
    lines = table.splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith(title))
    rows = {}
    for text in lines[start + 2:]:
        if not text.strip():
            break
        left, right = text.split("|")
        rows[left.split()[0]] = (left.split()[1:], right.split())
    return rows


def test_loading_keeps_the_last_line_of_a_key_and_skips_the_truncated_one(results):
    cells, warnings = read_cells(results)
    assert len(cells) == 9
    assert len(warnings) == 1 and f"{results}:{len(LINES)}" in warnings[0] and "truncated" in warnings[0]
    barrier = next(c for c in cells if c.key.startswith("ext4/barrier/fsync-append"))
    assert barrier.started == "2026-11-21T01:10:00Z"
    assert barrier.crash.clean == 20 and barrier.crash.data_loss == 0


def test_a_broken_line_in_the_middle_is_skipped_too(tmp_path):
    path = tmp_path / "matrix.jsonl"
    header = '{"kind": "matrix", "started": "2026-11-20T22:58:00Z"}'
    path.write_text("\n".join([header, LINES[0], "{not json", '{"kind": "cell", "fs": "xfs"}', LINES[1]]) + "\n")
    cells, warnings = read_cells(path)
    assert [c.mode for c in cells] == ["barrier", "nobarrier"]
    assert len(warnings) == 2
    assert "not valid JSON" in warnings[0] and "without mode, workload" in warnings[1]


def test_modes_come_in_order_of_safety_then_by_name():
    modes = ["zfs-sync", "extlog", "lying", "nocache", "nobarrier", "barrier", "dax"]
    assert sorted(modes, key=mode_rank) == ["barrier", "nobarrier", "nocache", "lying", "extlog", "dax", "zfs-sync"]


def test_the_table_has_a_row_per_mode_with_rates_ratio_and_counts(results):
    table = render_table(read_cells(results)[0])
    assert "xfs / tree-extract  (files=2000)" in table
    header = table.splitlines()[table.splitlines().index("xfs / tree-extract  (files=2000)") + 1]
    assert header.split() == ["mode", "extract", "op/s", "remove", "op/s", "vs", "barrier", "|",
                              "states", "clean", "data-loss", "fs-corrupt", "unmountable"]
    rows = group_rows(table, "xfs / tree-extract")
    assert list(rows) == ["barrier", "nobarrier", "nocache"]
    assert rows["barrier"] == (["160", "625", "x1.0"], ["20", "20", "0", "0", "0"])
    assert rows["nobarrier"] == (["800", "2500", "x0.20"], ["20", "9", "7", "3", "1"])
    assert rows["nocache"] == (["50.0", "500", "x3.2"], ["20", "20", "0", "0", "0"])


def test_missing_measurements_render_as_a_dash(results):
    table = render_table(read_cells(results)[0])
    assert group_rows(table, "ext4 / tree-extract")["nobarrier"] == (["500", "2000", "x0.40"], ["-"] * 5)
    assert group_rows(table, "ext4 / fsync-append")["nobarrier"] == (["-", "-"], ["20", "12", "8", "0", "0"])


def test_a_phase_without_an_op_count_is_shown_in_mb_per_second(results):
    table = render_table(read_cells(results)[0])
    assert re.search(r"ext4 / fsync-append.*\n +mode +append MiB/s +vs barrier", table)
    rows = group_rows(table, "ext4 / fsync-append")
    assert rows["barrier"][0] == ["0.31", "x1.0"]
    assert rows["nocache"][0] == ["0.61", "x0.50"]


def test_every_line_fits_a_wide_terminal(results):
    assert max(len(text) for text in render_table(read_cells(results)[0]).splitlines()) <= 120


def test_the_infra_error_column_appears_only_when_one_occurred(results, tmp_path):
    assert "infra-error" not in render_table(read_cells(results)[0])
    path = tmp_path / "infra.jsonl"
    path.write_text(LINES[0] + "\n" + line("xfs", "nobarrier", "tree-extract", TREE, None, crash(9, 7, 1, 1, 2)))
    table = render_table(read_cells(path)[0])
    assert group_rows(table, "xfs / tree-extract")["nobarrier"][1] == ["20", "9", "7", "1", "1", "2"]
    assert group_rows(table, "xfs / tree-extract")["barrier"][1][-1] == "0"


def test_a_cell_the_harness_failed_on_is_named_under_the_table(results):
    doc = json.loads(line("xfs", "nocache", "tree-extract", TREE, tree_extract(40.0, 4.0), None))
    doc["error"] = "harness failure (not a verdict): guest stopped answering"
    results.write_text("\n".join(LINES[:3] + [json.dumps(doc)]) + "\n")
    table = render_table(read_cells(results)[0])
    assert group_rows(table, "xfs / tree-extract")["nocache"][1] == ["-"] * 5
    assert "\n  xfs/nocache/tree-extract/ab12cd: harness failure (not a verdict): guest stopped" in table


def test_infra_errors_are_left_out_of_the_unsafe_share():
    share = CrashSummary(states=20, clean=8, data_loss=6, fs_corrupt=3, unmountable=1, infra_error=2).unsafe_share
    assert share == 10 / 18
    assert CrashSummary(states=20, clean=20, data_loss=None, fs_corrupt=0, unmountable=0).unsafe_share is None


def test_a_panel_per_group_and_a_point_per_mode_with_both_measurements(results):
    by_title = {p.title: p for p in panels(read_cells(results)[0])}
    xfs = by_title["xfs / tree-extract  (files=2000)"]
    assert [(p.label, p.x, p.y) for p in xfs.points] == [("barrier", 160, 0), ("nobarrier", 800, 11 / 20),
                                                         ("nocache", 50, 0)]
    assert xfs.x_label == "extract (op/s)"
    assert by_title["ext4 / tree-extract  (files=2000)"].left_out == ("nobarrier (no crash states)",)
    append_panel = by_title["ext4 / fsync-append  (records=500)"]
    assert append_panel.x_label == "append (MiB/s)"
    assert append_panel.left_out == ("nobarrier (no throughput)",)


def test_the_plot_is_a_png_written_atomically(results, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    render_plot(read_cells(results)[0], out / "plot.png")
    data = (out / "plot.png").read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 20_000
    assert [p.name for p in out.iterdir()] == ["plot.png"]


def test_the_html_page_holds_the_rows_the_image_and_escapes_values(results, tmp_path):
    hostile = line("xfs", "barrier", "<script>alert(1)</script>", TREE, tree_extract(12.5, 3.2), crash(20))
    results.write_text("\n".join(LINES) + "\n" + hostile + "\n")
    cells, _ = read_cells(results)
    render_plot(cells, tmp_path / "r.png")
    render_html(cells, tmp_path / "r.png", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "<tr><td>nobarrier</td><td>800</td><td>2500</td><td>x0.20</td>" in page
    assert '<td class="crash-start">20</td><td>9</td><td class="bad">7</td>' in page
    assert "Not linked, their saved states not found" in page
    image = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert image and base64.b64decode(image.group(1)) == (tmp_path / "r.png").read_bytes()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "6.1.0-56-amd64" in page and "xfsprogs 6.1.0-1" in page
    assert "<dt>data-loss</dt>" in page and "<dt>nocache</dt>" in page


def test_a_filesystem_name_with_markup_is_escaped_in_the_page(tmp_path):
    hostile = line('<script>alert("fs")</script>', "barrier", "tree-extract", TREE, tree_extract(12.5, 3.2), crash(20))
    path = tmp_path / "hostile.jsonl"
    path.write_text(hostile + "\n")
    cells, _ = read_cells(path)
    render_plot(cells, tmp_path / "r.png")
    render_html(cells, tmp_path / "r.png", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "<script>" not in page
    assert "<h3>&lt;script&gt;alert(&#34;fs&#34;)&lt;/script&gt; / tree-extract  (files=2000)</h3>" in page


def test_report_writes_the_three_files(results, tmp_path):
    paths = report(results, tmp_path / "rep")
    assert sorted(paths) == ["html", "png", "txt"]  # no state pages: no cell's states were saved
    text = paths["txt"].read_text()
    assert "nobarrier" in text and "truncated" in text and "guest kernel" in text
    assert paths["png"].read_bytes().startswith(PNG_SIGNATURE)
    assert "data:image/png;base64," in paths["html"].read_text()


def test_report_main_prints_the_table_and_the_paths(results, tmp_path, capsys):
    assert report_main(results, tmp_path / "rep") == 0
    out, err = capsys.readouterr()
    assert "xfs / tree-extract" in out and str(tmp_path / "rep" / "report.html") in out
    assert "truncated" in err


def test_report_main_refuses_a_missing_file(tmp_path, capsys):
    assert report_main(tmp_path / "nope.jsonl", None) == 2
    assert "no such results file" in capsys.readouterr().err
    assert not (tmp_path / "nope-report").exists()


def test_report_main_refuses_a_file_without_cells(tmp_path, capsys):
    path = tmp_path / "empty.jsonl"
    path.write_text('\n{"kind": "header", "started": "2026-11-20T23:00:00Z"}\n')
    assert report_main(path, tmp_path / "rep") == 2
    assert "no matrix cells" in capsys.readouterr().err


def test_the_distinct_column_appears_when_a_cell_counted_its_distinct_states(results, tmp_path):
    assert "distinct" not in render_table(read_cells(results)[0])
    counted = json.loads(LINES[0])
    counted["crash"]["distinct"] = 7
    path = tmp_path / "distinct.jsonl"
    path.write_text(json.dumps(counted) + "\n" + LINES[1] + "\n")
    table = render_table(read_cells(path)[0])
    header = table.splitlines()[1].split()
    assert header[header.index("states") + 1] == "distinct"
    rows = group_rows(table, "xfs / tree-extract")
    assert rows["barrier"][1][:2] == ["20", "7"] and rows["nobarrier"][1][:2] == ["20", "-"]
