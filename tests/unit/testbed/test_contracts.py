"""Contracts and invariants: every invariant is fed a state that must break it and one that
must not; the contracts decide between clean (with allowed losses) and data-loss."""

import sqlite3

import pytest

from plugpull.check.verdict import Ack, Observation, Verdict, classify, required_acks
from plugpull.errors import UsageError
from plugpull.testbed.fs import filesystem
from plugpull.testbed.workloads import (AtomicReplace, Findings, FsyncAppend, FsyncFiles, Script, Sqlite, GuestWorkload,
                                    workload)
from plugpull.results import StateResult
from plugpull.testbed.workloads.params import promised_acks

XFS = filesystem("xfs")


def test_fsync_files_unacked_file_holds_nothing_or_a_prefix():
    wl = FsyncFiles(count=3, seed=1)
    ok = {wl.path(1): wl.content(1), wl.path(2): wl.content(2)[:100], wl.path(3): b""}
    assert wl.examine([1], ok) == Findings()
    foreign = {wl.path(1): wl.content(1), wl.path(2): wl.content(3)[:100]}
    [broken] = wl.examine([1], foreign).broken
    assert "unacknowledged pp/f00002" in broken and "first foreign byte at" in broken
    zeros = {wl.path(2): b"\0" * 4096}
    assert wl.examine([], zeros).broken


def test_fsync_files_acked_file_that_is_wrong_is_a_loss_not_an_invariant():
    wl = FsyncFiles(count=2, seed=1)
    found = wl.examine([1], {wl.path(1): wl.content(1)[:10]})
    assert [l.ack for l in found.lost] == [1] and found.broken == []


def test_fsync_append_journal_is_a_prefix_of_the_records():
    wl = FsyncAppend(count=4, seed=1)
    written = wl.written()
    assert wl.examine([1, 2], {wl.path: written[: 2 * wl.record_size + 17]}) == Findings()
    hole = written[:wl.record_size] + b"\0" * wl.record_size + written[2 * wl.record_size:]
    [broken] = wl.examine([1], {wl.path: hole}).broken
    assert f"byte {wl.record_size}" in broken and "(record 2)" in broken
    assert wl.examine([], {wl.path: written + b"x"}).broken


def sqlite_files(tmp_path, rows: dict, wl: Sqlite) -> dict:
    """A hand-built database holding `rows` ({id: value}, None = the workload's row)."""
    path = tmp_path / "db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, wl.row(i) if v is None else v) for i, v in rows.items()])
    con.commit()
    con.close()
    return {"pp/db": path.read_bytes()}


NORMAL = Sqlite(transactions=10, synchronous="normal", checkpoint=5)
FULL = Sqlite(transactions=10)


def state(files: dict, wl, required, committed=()):
    return classify(XFS, Observation(0, 0, 0, files), wl, required, committed=committed)


def test_sqlite_rows_form_a_prefix(tmp_path):
    files = sqlite_files(tmp_path, {i: None for i in range(1, 7)}, FULL)
    assert FULL.examine([1, 2, 3], files) == Findings()
    (tmp_path / "db").unlink()
    hole = sqlite_files(tmp_path, {**{i: None for i in range(1, 6)}, 7: None}, FULL)
    [broken] = FULL.examine([1, 2], hole).broken
    assert "row 6 is missing while row 7 is present" in broken


def test_sqlite_torn_row_breaks_an_invariant(tmp_path):
    files = sqlite_files(tmp_path, {1: None, 2: "plugpull sqlite seed=1 id=2 but torn"}, FULL)
    [broken] = FULL.examine([1], files).broken
    assert "row 2 holds foreign content" in broken


def test_sqlite_unreadable_database_is_inconsistent_once_something_was_owed():
    files = {"pp/db": b"not a database at all" * 500}
    v = state(files, FULL, [1, 2])
    assert v.verdict is Verdict.INCONSISTENT and "cannot be read" in v.reason and len(v.lost) == 2
    assert state(files, FULL, []).verdict is Verdict.CLEAN  # the cut may lie before the setup
    assert state({}, FULL, [1]).verdict is Verdict.DATA_LOSS


def test_wal_normal_may_lose_the_commits_after_the_last_checkpoint(tmp_path):
    files = sqlite_files(tmp_path, {i: None for i in range(1, 7)}, NORMAL)
    v = state(files, NORMAL, [5], committed=list(range(1, 10)))
    assert v.verdict is Verdict.CLEAN and v.allowed == 3
    assert "3 acknowledged, not promised, lost as the contract allows" in v.reason


def test_wal_normal_losing_a_checkpointed_commit_is_data_loss(tmp_path):
    files = sqlite_files(tmp_path, {i: None for i in range(1, 4)}, NORMAL)
    v = state(files, NORMAL, [5], committed=list(range(1, 7)))
    assert v.verdict is Verdict.DATA_LOSS and [l.ack for l in v.lost] == [4, 5] and v.allowed == 1


def test_wal_normal_hole_is_inconsistent(tmp_path):
    files = sqlite_files(tmp_path, {1: None, 2: None, 4: None}, NORMAL)
    v = state(files, NORMAL, [], committed=[1, 2, 3, 4])
    assert v.verdict is Verdict.INCONSISTENT and "row 3 is missing" in v.reason


def test_full_losing_a_commit_is_data_loss_and_delete_full_names_the_fix(tmp_path):
    files = sqlite_files(tmp_path, {i: None for i in range(1, 8)}, FULL)
    v = state(files, FULL, list(range(1, 9)))
    assert v.verdict is Verdict.DATA_LOSS and [l.ack for l in v.lost] == [8] and v.allowed == 0
    delete = Sqlite(transactions=10, journal="delete")
    [lost] = state(files, delete, list(range(1, 9))).lost
    assert "SQLite documents this" in lost.reason and "EXTRA" in lost.reason
    assert "SQLite documents this" in delete.contract
    assert "EXTRA" not in Sqlite(journal="delete", synchronous="extra").contract


def test_sqlite_contract_lines():
    shells = [line for line in FULL.sql() if line.startswith(".shell")]
    assert shells[:2] == [".shell echo 'ack 1' >&4", ".shell echo 'ack 2' >&4"]
    normal = NORMAL.sql()
    checkpoint = normal.index("PRAGMA wal_checkpoint(FULL);")
    assert normal[checkpoint - 1] == ".shell echo 'commit 5' >&4"
    assert normal[checkpoint + 1] == ".shell echo 'ack 5' >&4"
    assert not [l for l in Sqlite(journal="delete").sql() if "checkpoint" in l]
    with pytest.raises(Exception, match="promises nothing"):
        workload("sqlite", journal="delete", synchronous="normal")


AR = AtomicReplace(count=5, seed=2)


def test_atomic_replace_holds_a_whole_version():
    assert AR.examine([1, 2], {AR.target: AR.content(3), AR.temp: AR.content(4)[:100]}) == Findings()
    assert AR.examine([], {}) == Findings()
    torn = AR.content(3)[:1000] + AR.content(2)[1000:]
    assert "no whole version" in AR.examine([], {AR.target: torn}).broken[0]
    assert "no whole version" in AR.examine([], {AR.target: b"\0" * 2048}).broken[0]
    assert "no whole version" in AR.examine([], {AR.target: b""}).broken[0]


def test_atomic_replace_half_a_rename():
    both = AR.examine([], {AR.target: AR.content(3), AR.temp: AR.content(3)}).broken
    assert both == [f"version 3 is under both names, {AR.temp} and {AR.target} (half a rename)"]
    neither = AR.examine([], {AR.temp: AR.content(3)}).broken
    assert "missing while version 3 was being written" in neither[0]
    assert AR.examine([], {AR.temp: AR.content(1)}) == Findings()
    back = AR.examine([], {AR.target: AR.content(1), AR.temp: AR.content(4)}).broken
    assert "went back to version 1" in back[0]


def test_atomic_replace_promises_the_acked_version_or_a_later_one():
    v = state({AR.target: AR.content(2)}, AR, [1, 2, 3])
    assert v.verdict is Verdict.DATA_LOSS and [l.ack for l in v.lost] == [3]
    assert state({AR.target: AR.content(4)}, AR, [1, 2, 3]).verdict is Verdict.CLEAN


def test_precedence_fs_corrupt_over_inconsistent_over_data_loss(tmp_path):
    wl = FsyncFiles(count=3, seed=1)
    files = {wl.path(2): b"foreign"}  # ack 1 lost, file 2 breaks the invariant
    both = classify(XFS, Observation(0, 0, 0, files), wl, [1])
    assert both.verdict is Verdict.INCONSISTENT and [l.ack for l in both.lost] == [1] and both.broken
    assert classify(XFS, Observation(0, 1, 0, files), wl, [1]).verdict is Verdict.FS_CORRUPT
    assert classify(XFS, Observation(1, 1, None, None), wl, [1]).verdict is Verdict.UNMOUNTABLE


def test_a_workload_without_invariants_keeps_its_lost():
    class Old(GuestWorkload):
        def lost(self, required, files):
            return [] if files else [object()] * len(required)

    assert Old().examine([1, 2], {}).lost and Old().examine([1], {"x": b""}) == Findings()
    assert Old.invariants == () and FsyncFiles.invariants


def test_commit_lines_are_not_promises():
    acks = [Ack(1, 10, 1, kind="commit"), Ack(2, 20, 2, kind="commit"), Ack(2, 30, 3), Ack(3, 40, 4, kind="commit")]
    assert required_acks(acks, 4) == [2]
    assert required_acks(acks, 3, kind="commit") == [1, 2]
    assert Ack(**{"ident": 1, "stamp": 5, "position": 1}).kind == "ack"  # a record from before


def test_state_result_without_the_new_fields_still_loads():
    doc = {"fs": "xfs", "mode": "barrier", "workload": "sqlite", "model": "reorder", "seed": 1, "cut": 9,
           "verdict": "clean", "reason": "ok", "acks_required": 3, "acks_lost": 0, "fsck_rc": 0}
    old = StateResult.from_json(doc)
    assert old.acks_allowed == 0 and old.broken == []
    new = StateResult.from_json({**doc, "acks_allowed": 2, "broken": ["row 3 is missing"]})
    assert StateResult.from_json(new.to_json()) == new and new.acks_allowed == 2


def test_sqlite_promises_are_the_acks_its_script_sends():
    assert promised_acks(Sqlite(transactions=10)) == 10
    assert promised_acks(Sqlite(transactions=10, synchronous="normal", checkpoint=5)) == 2
    with pytest.raises(UsageError, match="checkpoint"):
        workload("sqlite", checkpoint=0)


def test_a_check_scripts_inconsistent_line_is_an_inconsistent_verdict():
    wl = Script(text="echo 'ack 1' >&4\n", check="exit 0\n")
    out = {"check-script.out": b"inconsistent rec-5 exists without rec-4\nlost 1 gone\n", "check-script.rc": b"1"}
    v = state(out, wl, [1])
    assert v.verdict is Verdict.INCONSISTENT and "rec-5 exists without rec-4" in v.reason and len(v.lost) == 1
    assert state({"check-script.out": b"lost 1 gone\n", "check-script.rc": b"1"}, wl, [1]).verdict is Verdict.DATA_LOSS


@pytest.mark.parametrize("ident, acks", [("gen:seq1-000001", 2), ("gen:seq2-1507707", 3), ("gen:seq3-735518077", 4)])
def test_a_generated_workload_promises_the_setup_ack_and_one_per_point(ident, acks):
    """A generated program acks through its `pp_acked` (ack 0 after the setup, then one per
    point): counted, so that `crash --trigger acks:N` past them is warned of and a recording
    with none of them is refused, as for the other workloads."""
    from plugpull.generate.workload import generated_workload
    wl = generated_workload(ident, "btrfs")
    assert promised_acks(wl) == acks == len(wl.generated.points()) + 1
