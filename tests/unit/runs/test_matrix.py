import json

from plugpull.crash.spec import CrashSpec
from plugpull.results import CellResult, append_line, read_cells
from plugpull.runs.matrix import Cell, cells, done_keys


def test_cells_are_the_cross_product_with_distinct_keys():
    todo = cells(CrashSpec(), ["xfs", "ext4"], ["barrier", "nobarrier"], ["fsync-files"], {"fsync-files": {"count": 5}})
    assert len(todo) == 4 and len({c.key() for c in todo}) == 4
    assert all(dict(c.params) == {"count": 5} for c in todo)


def test_key_changes_with_anything_that_defines_a_cell():
    base = Cell(CrashSpec("xfs", "barrier", "fsync-files"))
    assert base.key() == Cell(CrashSpec("xfs", "barrier", "fsync-files")).key()
    for other in (Cell(CrashSpec("xfs", "barrier", "fsync-files", states=7)),
                  Cell(CrashSpec("xfs", "barrier", "fsync-files"), profile="host"),
                  Cell(CrashSpec("xfs", "barrier", "fsync-files", params=(("count", 3),)))):
        assert other.key() != base.key()


def result(key, error=None):
    return CellResult(key=key, fs="xfs", mode="barrier", workload="fsync-files", error=error).to_json()


def test_lines_survive_a_torn_tail_and_errors_are_not_done(tmp_path):
    results = tmp_path / "r.jsonl"
    append_line(results, result("a"))
    append_line(results, result("b", error="harness failure"))
    with open(results, "a") as f:
        f.write('{"kind": "cell", "key": "c", "mo')
    assert done_keys(results) == {"a"}
    append_line(results, result("c"))
    append_line(results, result("b"))
    assert done_keys(results) == {"a", "b", "c"}
    assert all(json.loads(line) for line in results.read_text().splitlines()[-2:])
    assert {c.key: c.error for c in read_cells(results)[0]}["b"] is None
