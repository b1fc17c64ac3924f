"""The known-bugs table (suites/known/fstests.toml) and docs/known-bugs.md: the doc is what the
data gives, each listed id still names the table's steps, and its guest program performs them
in order; a wrong step, a program without a step's point, a changed doc and a bad row are caught."""

import re
from dataclasses import replace

import pytest

from plugpull.errors import UsageError
from plugpull.generate import known, knowndoc
from plugpull.generate.known import Bug, bug_of, load, mismatches, need_counts, renumbered
from plugpull.generate.ops import Op, Persist
from plugpull.generate.space import Step

TABLE = load()
LISTED = [b for b in TABLE.bugs if b.gen]


def test_the_doc_is_what_the_data_gives():
    assert knowndoc.DOC.read_text() == knowndoc.render(TABLE), "rerun: python -m plugpull.generate.knowndoc"
    assert knowndoc.main(["--check"]) == 0


def test_check_fails_on_a_doc_that_drifted_and_passes_once_written(tmp_path, monkeypatch):
    monkeypatch.setattr(knowndoc, "DOC", tmp_path / "known-bugs.md")
    knowndoc.DOC.write_text(knowndoc.render(TABLE).replace("expressible", "expressable", 1))
    assert knowndoc.main(["--check"]) == 1
    assert knowndoc.main([]) == 0 and knowndoc.main(["--check"]) == 0
    assert knowndoc.main(["--write-it"]) == 2


def test_a_changed_table_gives_another_doc():
    bug = next(b for b in TABLE.bugs if b.reach == "expressible")
    moved = replace(TABLE, bugs=tuple(replace(b, reach="out of reach", needs=("evict",)) if b is bug else b
                                      for b in TABLE.bugs))
    assert knowndoc.render(moved) != knowndoc.DOC.read_text()


@pytest.mark.parametrize("bug", LISTED, ids=[b.test for b in LISTED])
def test_a_listed_id_performs_the_table_steps(bug):
    assert mismatches(bug) == []


def test_a_wrong_step_is_caught():
    bug = next(b for b in LISTED if b.steps[-1].persist.kind == "fsync")
    last = bug.steps[-1]
    wrong = replace(bug, steps=bug.steps[:-1] + (Step(last.op, Persist("sync")),))
    assert mismatches(wrong) and "not" in mismatches(wrong)[0]


def test_a_program_without_a_step_point_is_caught(monkeypatch):
    bug = next(b for b in LISTED if b.gen.startswith("seq2-"))
    real = known.program

    def without_last_point(workload):
        return "\n".join(line for line in real(workload).splitlines() if "# point 2:" not in line) + "\n"

    monkeypatch.setattr(known, "program", without_last_point)
    assert any("step 2 lacks" in m for m in mismatches(bug))


def test_the_table_holds_together():
    tests = [b.test for b in TABLE.bugs] + [u["test"] for u in TABLE.unnamed] + [e["test"] for e in TABLE.excluded]
    assert len(tests) == len(set(tests)), "a test is listed twice"
    for bug in TABLE.bugs:
        assert bug.fixes and all(s for _, s in bug.fixes) and bug.named_in in ("test", "commit")
        assert bug.workload.endswith(("power loss", "fiemap")) or "power loss" in bug.workload
        assert (bug.reach == "one step off") == bool(bug.off), bug.test
    assert len(TABLE.source["commit"]) == 40


ROW = {"test": "generic/999", "fixes": [{"id": "", "subject": "x: y"}], "named_in": "test", "workload": "w",
       "reach": "out of reach", "needs": ["evict"]}


@pytest.mark.parametrize("change", [
    {"reach": "maybe"},
    {"needs": ["teleport"]},
    {"reach": "expressible", "gen": "seq1-000001", "steps": [{"op": "creat", "args": ["A/foo"], "point": "sync"}]},
    {"reach": "out of reach", "needs": []},
    {"reach": "one step off", "near": "seq1-000001", "needs": ["sizes"]},
])
def test_a_bad_row_is_refused(change):
    with pytest.raises(UsageError):
        bug_of({**ROW, **change})


def test_a_good_row_reads():
    bug = bug_of({**ROW, "reach": "one step off", "near": "seq1-000001", "off": "o",
                  "steps": [{"op": "write.append", "args": ["A/foo"], "point": "fsync A/foo"}]})
    assert bug.gen == "seq1-000001" and bug.fs == "x"
    assert bug.steps == (Step(Op("write", "append", ("A/foo",)), Persist("fsync", "A/foo")),)


def test_a_rows_profile_is_a_filesystem_and_is_said_with_its_id():
    row = {**ROW, "reach": "expressible", "needs": [], "gen": "seq1-000001", "profile": "btrfs+holes",
           "steps": [{"op": "write.append", "args": ["A/foo"], "point": "fsync A/foo"}]}
    bug = bug_of(row)
    assert bug.profile == "btrfs+holes" and bug.on == "`gen:seq1-000001` on `btrfs+holes`"
    assert bug_of({**row, "profile": ""}).on == "`gen:seq1-000001`"
    with pytest.raises(UsageError, match="unknown option 'no-holes'"):
        bug_of({**row, "profile": "btrfs+no-holes"})
    profiled = [b for b in TABLE.bugs if b.profile]
    assert {b.test: b.profile for b in profiled} == {"btrfs/206": "btrfs+holes+commit=1", "generic/695": "btrfs+holes"}


def test_needs_are_ranked_by_the_bugs_they_alone_keep_out():
    def bug(*needs):
        return Bug("t", (("", "s"),), "test", "w", "out of reach", needs=needs)

    bugs = [bug("evict"), bug("evict", "sizes"), bug("sizes", "reflink"), bug("sizes", "more-ops"), bug("reflink")]
    assert need_counts(bugs) == [("evict", 1, 2), ("reflink", 1, 2), ("sizes", 0, 3), ("more-ops", 0, 1)]


def test_renumber_sets_each_listed_id_to_its_steps_id_and_leaves_the_current_ones():
    moved = bug_of({**ROW, "reach": "expressible", "needs": [], "gen": "seq1-000005",
                    "steps": [{"op": "creat", "args": ["A/foo"], "point": "sync"}]})
    text = 'test = "generic/999"\ngen = "seq1-000005"\nnote = "gen = \\"seq1-000005\\""\n'
    out, moves = renumbered(text, [moved])
    assert moves == [("seq1-000005", "seq1-000000")]
    assert out == text.replace('gen = "seq1-000005"\n', 'gen = "seq1-000000"\n', 1)
    assert renumbered(known.DATA.read_text(), LISTED) == (known.DATA.read_text(), [])


def test_a_shapes_listed_id_is_checked_and_renumbered_in_its_shape():
    bug = next(b for b in LISTED if b.test == "btrfs/243")
    assert bug.gen.startswith("seq5.renames-") and mismatches(bug) == []
    first, *rest = bug.steps
    wrong = replace(bug, steps=(Step(first.op, Persist("sync")), *rest))
    assert mismatches(wrong) and "not" in mismatches(wrong)[0]
    stale = replace(bug, gen="seq5.renames-000007")
    out, moves = renumbered('gen = "seq5.renames-000007"\n', [stale])
    assert moves == [("seq5.renames-000007", bug.gen)] and out == f'gen = "{bug.gen}"\n'


def test_a_links_row_is_checked_for_its_setup_and_the_links_its_program_makes(monkeypatch):
    bug = next(b for b in LISTED if b.test == "generic/040")
    assert bug.setup == "links" and bug.gen.startswith("seq1l-") and mismatches(bug) == []
    synced = replace(bug, gen=bug.gen.replace("seq1l-", "seq1-"))
    assert mismatches(synced) == [f"{synced.gen} has the synced setup, not links"]
    real = known.program

    def without_the_links(workload):
        return "\n".join(line for line in real(workload).splitlines() if "_link_" not in line) + "\n"

    monkeypatch.setattr(known, "program", without_the_links)
    assert mismatches(bug) == [f"{bug.gen}: its program makes no links to A/foo before the setup's sync"]


@pytest.mark.parametrize("test, setup, made, lost", [
    ("generic/745", "xattrs", "xattrs on A/foo", "user.attr_"), ("btrfs/119", "quota", "quotas", "quota enable")])
def test_a_row_of_a_setup_with_more_is_checked_for_what_its_program_makes(monkeypatch, test, setup, made, lost):
    bug = next(b for b in LISTED if b.test == test)
    assert bug.setup == setup and mismatches(bug) == []
    synced = replace(bug, gen=re.sub(r"^seq(\d)[xq]-", r"seq\1-", bug.gen))
    assert mismatches(synced) == [f"{synced.gen} has the synced setup, not {setup}"]
    real = known.program

    def without(workload):
        return "\n".join(line for line in real(workload).splitlines() if lost not in line) + "\n"

    monkeypatch.setattr(known, "program", without)
    assert mismatches(bug) == [f"{bug.gen}: its program makes no {made} before the setup's sync"]
