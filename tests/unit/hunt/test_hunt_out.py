"""A hunt's directory (`--out`) and journal, no guest: a new name, an empty directory or a hunt of
the same settings taken and left as they were, anything else refused (a file, a foreign
directory, other settings, a link where the hunt keeps its files); the journal going on past a
torn or garbled line; a hunt started before a later table going on with the tables it had."""

import json
from pathlib import Path

import pytest

from tests.unit.hunt.test_hunt import SETTINGS_DOC, judged
from plugpull.errors import UsageError
from plugpull.hunt.journal import JOURNAL, REJECTED, SETTINGS, Journal, check_out, read_lines, set_aside
from plugpull.hunt.summary import summary


def tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in root.rglob("*")}


def test_a_new_name_an_empty_dir_and_a_hunt_of_the_same_settings_are_taken_and_left_as_they_were(tmp_path):
    (tmp_path / "empty-out").mkdir()
    Journal(tmp_path / "earlier-hunt", SETTINGS_DOC).append([{"id": "seq1-000001", "failing": False}])
    before = tree(tmp_path)
    assert set(before) == {"empty-out", "earlier-hunt", f"earlier-hunt/{SETTINGS}", f"earlier-hunt/{JOURNAL}"}
    for out in ("new-out", "empty-out", "earlier-hunt"):
        check_out(tmp_path / out, SETTINGS_DOC)
    check_out(tmp_path / "earlier-hunt")
    assert tree(tmp_path) == before, "checking --out made or changed something"


@pytest.mark.parametrize("make, words", [
    (lambda p: p.write_text("x"), "not a directory"),
    (lambda p: (p.mkdir(), (p / "results.jsonl").write_text("")), "not a hunt's directory"),
    (lambda p: (p.mkdir(), (p / SETTINGS).write_text(json.dumps({**SETTINGS_DOC, "fs": "xfs"}))), "fs 'xfs' there"),
    (lambda p: (p.mkdir(), (p / SETTINGS).write_text("{")), "unreadable"),
])
def test_a_file_a_foreign_dir_and_a_hunt_of_other_settings_are_refused(tmp_path, make, words):
    out = tmp_path / "out"
    make(out)
    with pytest.raises(UsageError, match=words):
        check_out(out, SETTINGS_DOC)


def test_the_journal_goes_on_past_a_torn_line_and_retries_the_harness_failures(tmp_path):
    j = Journal(tmp_path / "h", SETTINGS_DOC)
    j.append([judged("a"), {"id": "b", "ops": "x", "infra": "QEMU died"}])
    with open(tmp_path / "h" / JOURNAL, "a") as f:
        f.write('{"id": "c", "fail')  # Ctrl-C while writing
    assert set_aside(tmp_path / "h") == 1  # as the hunt going on does, holding the directory
    again = Journal(tmp_path / "h", SETTINGS_DOC)
    assert set(again.done) == {("a", "6.1.0-x")}  # a line without a kernel is of the hunt's one kernel
    again.append([judged("b", failing=True)])
    assert set(Journal(tmp_path / "h", SETTINGS_DOC).done) == {("a", "6.1.0-x"), ("b", "6.1.0-x")}
    assert json.loads((tmp_path / "h" / SETTINGS).read_text()) == SETTINGS_DOC
    assert (tmp_path / "h" / REJECTED).read_text() == '{"id": "c", "fail\n'


@pytest.mark.parametrize("garbled", ['{"id":"seq1-000333"}', '[1, 2]', 'null', '{"id": 7, "verdicts": {}}',
                                     '{"id": "c", "states": true, "distinct": 1, "verdicts": {}, "rules": {}, '
                                     '"failing": false}'])
def test_a_garbled_line_is_set_aside_and_its_workload_judged_again(tmp_path, garbled):
    Journal(tmp_path / "h", SETTINGS_DOC).append([judged("a"), judged("c")])
    with open(tmp_path / "h" / JOURNAL, "a") as f:
        f.write(garbled + "\n")
    again = Journal(tmp_path / "h", SETTINGS_DOC)
    assert set(again.done) == {("a", "6.1.0-x"), ("c", "6.1.0-x")} and again.left_out == 1
    assert not (tmp_path / "h" / REJECTED).exists()  # reading changes nothing
    assert set_aside(tmp_path / "h") == 1
    assert (tmp_path / "h" / REJECTED).read_text() == garbled + "\n"
    assert [json.loads(t)["id"] for t in (tmp_path / "h" / JOURNAL).read_text().splitlines()] == ["a", "c"]
    assert read_lines(tmp_path / "h" / JOURNAL) == [judged("a"), judged("c")]


@pytest.mark.parametrize("name", [JOURNAL, SETTINGS, "hunt.log", "summary.txt", "failing"])
def test_a_link_where_the_hunt_keeps_its_files_is_refused(tmp_path, name):
    out = tmp_path / "out"
    Journal(out, SETTINGS_DOC).append([judged("a")])
    victim = tmp_path / "victim.txt"
    victim.write_text("not the hunt's\n")
    target = out / name
    if target.exists():
        target.rename(tmp_path / "moved")
    target.symlink_to(victim if name != "failing" else tmp_path)
    if name == SETTINGS:
        victim.write_text(json.dumps(SETTINGS_DOC))
    with pytest.raises(UsageError, match=f"{target}: a symbolic link"):
        check_out(out, SETTINGS_DOC)
    assert victim.read_text() in ("not the hunt's\n", json.dumps(SETTINGS_DOC))


def test_a_hunt_says_its_setup_and_one_from_before_the_key_goes_on_as_synced_with_the_first_table(tmp_path):
    from plugpull.cli.hunt import held_table
    from plugpull.hunt.hunter import HuntSpec

    synced, unsynced = HuntSpec(seq=1).settings("6.1"), HuntSpec(seq=1, setup="unsynced").settings("6.1")
    assert (synced["setup"], synced["table"], unsynced["setup"]) == ("synced", 16, "unsynced")
    out = tmp_path / "old-hunt"
    out.mkdir()
    old = {k: v for k, v in HuntSpec(seq=1, table=1).settings("6.1").items() if k not in ("setup", "table")}
    (out / SETTINGS).write_text(json.dumps(old))
    assert held_table(out) == 1 and held_table(tmp_path / "new") == 16
    check_out(out, HuntSpec(seq=1, table=1).settings("6.1"))  # goes on as synced, first table
    with pytest.raises(UsageError, match="setup 'synced' there, 'unsynced' here"):
        check_out(out, HuntSpec(seq=1, setup="unsynced", table=1).settings("6.1"))
    with pytest.raises(UsageError, match="table 1 there, 16 here"):
        check_out(out, synced)


@pytest.mark.parametrize("table, had, named, named_count, said", [
    (2, 412, ("rmdir", "sync"), 2, "the first two operation tables"),  # started before rmdir
    (3, 416, ("collapse", "fsync"), 4, "the first three operation tables"),  # before the fourth table
    (4, 476, ("nested", "fsync"), 40, "the first four operation tables"),  # before the nested directory
    (5, 539, ("evict", "sync"), 1, "the first five operation tables"),  # before eviction, reflink, fsync-any
    (6, 1038, ("unlink-open", "fsync-open"), 4, "the first six operation tables"),  # before unlink-open
    (7, 1046, ("again", "fsync-any"), 6, "the first seven operation tables"),  # before again
    (8, 1056, ("punch", "sync"), 20, "the first eight operation tables"),  # before the other offsets and sizes
    (9, 1212, ("third", "sync"), 14, "the first nine operation tables"),  # before the third name, nested links
    (10, 1380, ("self-clone", "sync"), 8, "the first ten operation tables"),  # before the clone within one file
    (11, 1420, ("snapshot", "sync"), 2, "the first eleven operation tables"),  # before the snapshots
    (12, 1425, ("tmpfile", "sync"), 2, "the first twelve operation tables"),  # before O_TMPFILE
    (13, 1431, ("holes", "sync"), 7, "the first thirteen operation tables"),  # before holes
    (14, 1466, ("fourth", "sync"), 3, "the first fourteen operation tables"),  # before the fourth name
    (15, 1481, ("clone-hole", "sync"), 1, "the first fifteen operation tables"),  # before the clone of a hole
])
def test_a_hunt_started_before_a_later_table_goes_on_with_the_tables_it_had(tmp_path, table, had, named, named_count,
                                                                            said):
    """Its settings say the tables it had: the same workloads as when it started, with their
    ids; a new hunt takes every table, and operations named by --ops are taken as named."""
    from plugpull.cli.generate import space_of_options
    from plugpull.cli.hunt import held_table
    from plugpull.hunt.hunter import HuntSpec

    out = tmp_path / f"hunt-{table}-tables"
    out.mkdir()
    (out / SETTINGS).write_text(json.dumps(HuntSpec(seq=1, table=table).settings("6.1")))
    assert held_table(out) == table
    check_out(out, HuntSpec(seq=1, table=table).settings("6.1"))
    with pytest.raises(UsageError, match=f"table {table} there, 16 here"):
        check_out(out, HuntSpec(seq=1).settings("6.1"))
    old, new = space_of_options(1, (), table=table), space_of_options(1, ())
    assert (old.total(), new.total()) == (had, 1488)
    assert [w.ident for w in old.workloads()] == [f"seq1-{i:06d}" for i in range(had)]
    assert max(old.sample(100, seed=3)) < had and max(new.sample(1488, seed=3)) == 1487
    assert space_of_options(1, named, table=table).total() == named_count
    assert f"({said})" in summary(HuntSpec(seq=1, table=table).settings("6.1"), [], had)
    assert "operation table" not in summary(HuntSpec(seq=1).settings("6.1"), [], 1488)


def test_a_garbled_table_is_refused_as_another_hunts_settings(tmp_path):
    from plugpull.cli.hunt import held_table
    from plugpull.hunt.hunter import HuntSpec

    out = tmp_path / "hunt-garbled"
    out.mkdir()
    (out / SETTINGS).write_text(json.dumps({**HuntSpec(seq=1).settings("6.1"), "table": "x"}))
    assert held_table(out) == 16
    with pytest.raises(UsageError, match="table 'x' there, 16 here"):
        check_out(out, HuntSpec(seq=1, table=held_table(out)).settings("6.1"))


def test_set_aside_reads_the_journal_once(tmp_path, monkeypatch):
    from plugpull import rundir
    j = Journal(tmp_path / "h", SETTINGS_DOC)
    j.append([judged("a")])
    with open(tmp_path / "h" / JOURNAL, "a") as f:
        f.write('{"id": "c", "fail')
    reads = []
    real = rundir.read_journal
    monkeypatch.setattr(rundir, "read_journal", lambda path: reads.append(path) or real(path))
    assert set_aside(tmp_path / "h") == 1
    assert reads == [tmp_path / "h" / JOURNAL]


def test_a_hunt_interrupted_leaves_the_summary_of_what_its_journal_holds(tmp_path):
    """Ctrl-C in a hunt that goes on: summary.txt is rewritten from the journal (the workloads
    judged so far, earlier runs' and this one's), not left as the earlier run's end."""
    from plugpull.cli.hunt import space_of_options
    from plugpull.hunt.hunter import HuntSpec, open_hunt

    spec = HuntSpec(seq=1, sample=3)
    space = space_of_options(1, None, "synced", spec.table)
    out = tmp_path / "h"
    with open_hunt(spec, space, ["6.1.0-x"], out) as (journal, ids, run):
        journal.append([judged(ids[0])])
    (out / "summary.txt").write_text("the first run's end: 1 of 3 workloads\n")
    with pytest.raises(KeyboardInterrupt):
        with open_hunt(spec, space, ["6.1.0-x"], out) as (journal, ids, run):
            journal.append([judged(ids[1], failing=True)])
            raise KeyboardInterrupt
    text = (out / "summary.txt").read_text()
    assert "2 of 3 workloads" in text and "1 failing" in text
    with pytest.raises(RuntimeError):  # any other failure leaves the files as they were
        with open_hunt(spec, space, ["6.1.0-x"], out) as (journal, ids, run):
            (out / "summary.txt").write_text("kept\n")
            raise RuntimeError("boom")
    assert (out / "summary.txt").read_text() == "kept\n"
