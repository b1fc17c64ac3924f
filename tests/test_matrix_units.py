import json

from plugpull.lab.spec import CrashSpec
from plugpull.lab.matrix import Cell, append_line, cells, load_cells, load_done


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


def test_lines_survive_a_torn_tail_and_errors_are_not_done(tmp_path):
    results = tmp_path / "r.jsonl"
    append_line(results, {"kind": "cell", "key": "a", "mode": "barrier"})
    append_line(results, {"kind": "cell", "key": "b", "error": "harness failure"})
    with open(results, "a") as f:
        f.write('{"kind": "cell", "key": "c", "mo')
    assert load_done(results) == {"a"}
    append_line(results, {"kind": "cell", "key": "c"})
    append_line(results, {"kind": "cell", "key": "b"})
    assert load_done(results) == {"a", "b", "c"}
    assert all(json.loads(line) for line in results.read_text().splitlines()[-2:])
    assert load_cells(results)["b"] == {"kind": "cell", "key": "b"}
