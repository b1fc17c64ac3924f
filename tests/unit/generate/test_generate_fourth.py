"""The fifteenth operation table: a fourth file name in A (`fourth`: A/foo or A/bar renamed to
A/qux, a file made at A/qux), and the shape `four-names` that holds fstests generic/479's and
generic/526's steps with it. The ids the first fourteen tables gave name the same workloads
(digests of the fourteen tables' code, seq 1 whole and a sample of seq 2); the new ones come
after them; the fourth name is owed where a workload has it, and a rule that left it out is
caught. No VM."""

import pytest
from tests.unit.generate.pins import seq1_pin, seq2_drawn_pin
from tests.unit.generate.test_generate_later import host_tools, program_leaves_its_tree  # noqa: F401
from tests.unit.generate.test_generate_names import state, unnumbered
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean

from plugpull.check.verdict import Verdict
from plugpull.generate import oracle
from plugpull.generate.judge import judge
from plugpull.generate.ops import plain
from plugpull.generate.oracle import LINUX
from plugpull.generate.program import program
from plugpull.generate.space import Space, shape_space, steps_of
from plugpull.generate.steps import Workload
from plugpull.generate.tree import FOURTH

# sha256 of "ID TEXT | SETUP\n" for every seq 1 workload of the first fourteen tables, and for 300
# seq 2 ids drawn from them by random.Random(15), as the fourteen tables' code gave them
FOURTEEN_TABLES = (1466, "ebb61f36427e5079bf0f54117405fa907e344e8b9d776f93154a794d1fea34a1")
DRAWN = "e47dc25f7e3bd163c8b3fc0be19b2d16361bc4ab8044e9a6c73b133b0fa86acd"

# generic/526: rename fname1 fname3; rename fname2 fname4; link fname3 fname2; fname1 made anew, fsynced
GENERIC_526 = "third.rename A/foo A/baz; fourth.rename A/bar A/qux; third.link A/baz A/bar; creat A/foo, fsync A/foo"
# generic/479 (its special file foo is A/foo): creat f1, fsync; rename foo bar; link bar foo; creat f2, fsync
GENERIC_479 = "creat A/bar, fsync A/bar; third.rename A/foo A/baz; third.link A/baz A/foo; fourth.creat A/qux, fsync A/qux"
SHAPE_COUNT = 617210


def in_shape(text: str) -> Workload:
    space = shape_space("four-names")
    return space.workload(space.locate(steps_of(text)))


def test_every_seq1_id_of_the_fourteen_tables_names_the_same_workload():
    assert seq1_pin(14) == FOURTEEN_TABLES


def test_seq2_ids_of_the_fourteen_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(14, seed=15) == DRAWN


def test_the_fourth_name_workloads_come_after_the_fourteen_tables():
    new = [w for w in Space(1).workloads() if 1466 <= w.index < 1481]  # the sixteenth's come after
    assert [w.text() for w in new[:5]] == [
        "fourth.rename A/foo A/qux, sync", "fourth.rename A/foo A/qux, fsync A/qux",
        "fourth.rename A/foo A/qux, fdatasync A/qux", "fourth.rename A/foo A/qux, fsync A",
        "fourth.rename A/foo A/qux, fsync-any ."]
    assert len(new) == 15 and {w.steps[0].op.family for w in new} == {"fourth"}
    assert new[-1].ident == "seq1-001480" and new[-1].text() == "fourth.creat A/qux, fsync-any ."
    assert Space(1, ("fourth",), ("fsync", "fdatasync", "sync")).total() == 12


def test_each_runs_as_its_first_table_twin():
    rename, creat = (steps_of(t)[0].op for t in ("fourth.rename A/bar A/qux", "fourth.creat A/qux"))
    assert plain(rename).text() == "rename.file A/bar A/qux" and plain(creat).text() == "creat A/qux"
    assert "mv -fT A/bar A/qux\n" in program(unnumbered("fourth.rename A/bar A/qux, fsync A"))
    assert "touch A/qux\nsync A/qux  # point 1: fsync A/qux\n" in program(unnumbered("fourth.creat A/qux, fsync A/qux"))


def test_a_fourth_name_only_from_what_is_free():
    """A rename to A/qux or a file made there wants it free; a rename of A takes it to B/qux."""
    with pytest.raises(AssertionError):
        unnumbered("fourth.creat A/qux; fourth.rename A/foo A/qux, sync")
    moved = unnumbered("fourth.creat A/qux; rename.dir A B, fsync B")
    assert set(moved.trees[-1].paths) >= {"B", "B/qux"} and "A/qux" not in moved.trees[-1].paths


def test_the_shape_holds_526s_and_479s_steps_with_four_names_in_one_directory():
    assert shape_space("four-names").count() == SHAPE_COUNT
    w526, w479 = in_shape(GENERIC_526), in_shape(GENERIC_479)
    assert (w526.ident, w479.ident) == ("seq4.four-names-277893", "seq4.four-names-209352")
    assert sorted(w526.trees[-1].names()) == ["A", "A/bar", "A/baz", "A/foo", "A/qux"]
    last = w526.trees[-1]
    assert last.paths["A/bar"] == last.paths["A/baz"] and last.inode("A/foo").data == b""
    assert last.inode("A/qux").data == bytes([0x42]) * 16384  # fname2's data, at fname4


def test_a_rename_to_the_fourth_name_lost_after_its_directorys_fsync_is_data_loss():
    text = "fourth.rename A/bar A/qux, fsync A"
    gone = state(text, changes={"A/qux": None, "A/bar": state(text)["A/qux"]})
    for fs in LINUX:
        assert judge(unnumbered(text), fs, 1, state(text)).verdict == Verdict.CLEAN, fs
        assert judge(unnumbered(text), fs, 1, gone).verdict == Verdict.DATA_LOSS, fs
        assert judge(unnumbered(text), fs, 0, gone).verdict == Verdict.CLEAN, fs  # before the point


def test_a_rule_that_leaves_the_fourth_name_out_is_caught(monkeypatch):
    """Owed like the third name, only where a tree of the workload has it: a `named` that leaves
    it out lets the loss through."""
    text = "fourth.creat A/qux, fsync A"
    gone = state(text, changes={"A/qux": None})
    assert judge(unnumbered(text), "ext4", 1, gone).verdict == Verdict.DATA_LOSS
    named = oracle.named
    monkeypatch.setattr(oracle, "named", lambda workload: tuple(p for p in named(workload) if p not in FOURTH))
    assert judge(unnumbered(text), "ext4", 1, gone).verdict == Verdict.CLEAN  # the loss slips through


def test_a_workload_without_the_fourth_name_owes_nothing_of_it():
    assert "A/qux" not in oracle.named(unnumbered("rename.file A/foo A/bar, fsync A"))
    assert "A/qux" in oracle.named(unnumbered("fourth.creat A/qux, sync"))


def test_each_new_seq1_workload_and_a_seq2_sample_judge_their_own_trees_clean():
    assert_own_states_clean(Space(1), range(1466, 1481))
    drawn = [i for i in Space(2).sample(3000, seed=4) if 3141549 <= i < 3210932]  # the fifteenth table's block
    assert drawn
    assert_own_states_clean(Space(2), drawn[:20])
    assert_own_states_clean(shape_space("four-names"), shape_space("four-names").sample(10, seed=4))


@pytest.mark.parametrize("text", [GENERIC_526, GENERIC_479], ids=["526", "479"])
def test_the_programs_of_526_and_479_leave_the_models_tree(host_tools, text, tmp_path):  # noqa: F811
    program_leaves_its_tree(in_shape(text), tmp_path)
