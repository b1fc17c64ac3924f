"""The tenth operation table: the third name `baz` in each directory (`third`), links into and
out of the nested directory (`nested-link`), A/C moved into B and back with a file made at its
old name (`move-dir`): fstests generic/343, 498, 782 and 784's steps, and 552's rename to a
third name. The ids the first nine tables gave name the same workloads (pinned by digests of
the nine tables' code, seq 1 whole and a sample of seq 2); the new ones come after them; what a
point owes after each is checked on states worked out by hand, and the check is shown to fail
with a deliberately wrong rule. No VM."""

import random
from dataclasses import replace

import pytest
from tests.unit.generate.pins import seq1_pin, seq2_drawn_pin
from tests.unit.generate.test_generate_later import host_tools, program_leaves_the_models_tree, \
    reproducers_checks_pass  # noqa: F401
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean

from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.generate import oracle
from plugpull.generate.judge import judge
from plugpull.generate.names import NAME_FAMILIES
from plugpull.generate.ops import Sim, apply, up_to
from plugpull.generate.oracle import LINUX
from plugpull.generate.program import program
from plugpull.generate.space import Space, Workload, ordered_setup, steps_of, workload_of
from plugpull.generate.tree import DIR, THIRD, Entry, under

# sha256 of "ID TEXT | SETUP\n" for every seq 1 workload of the first nine tables, and for 300
# seq 2 ids drawn from them by random.Random(53), as the nine tables' code gave them
NINE_TABLES = (1212, "c42f9f7d28047aaf2da1d3ebb5afe2fbafa8f28a52cbeb32766f9efe2c2bc1c3")
DRAWN = "2d0f6069848619dbf1dbef453a987a2c36d43842150f0ed0a7dbbd440d0cd796"

GENERIC_343 = "link A/foo A/bar; move-dir.dir B/C A/C; third.rename B/baz A/baz, fsync-any A/bar"
GENERIC_498 = "nested.mkdir A/C; creat B/foo, fsync B/foo; nested-link B/foo A/C/foo, fsync A"  # unsynced setup
GENERIC_782 = "nested.mkdir A/C; write.overwrite A/bar, fsync A/bar; nested-link A/bar A/C/bar, fsync A"
GENERIC_784 = "move-dir.dir A/C B/C; move-dir.creat A/C, fsync A/C; move-dir.file A/C B/foo, fsync B/foo"
RENAMED_TO_BAZ = "third.rename A/bar A/baz, fsync A/baz"  # generic/552's last step



def test_every_seq1_id_of_the_nine_tables_names_the_same_workload():
    assert seq1_pin(9) == NINE_TABLES


def test_seq2_ids_of_the_nine_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(9, seed=53) == DRAWN


def test_the_tenth_tables_workloads_come_after_the_nine_tables_and_are_pinned():
    new = [w for w in Space(1).workloads() if 1212 <= w.index < Space(1, *up_to(10)).total()]
    assert len(new) == 168 and all(w.steps[0].op.family in NAME_FAMILIES for w in new)
    assert new[0].text() == "third.rename A/foo A/baz, sync" and new[0].setup == ("A", "A/foo")
    assert Space(2, ("third",), ("fsync", "fdatasync", "sync")).total() == 3480
    assert workload_of(GENERIC_343).ident == "seq3-3919944307"
    assert workload_of(GENERIC_498, synced=False).ident == "seq3u-4311713415"
    assert workload_of(GENERIC_782).ident == "seq3-4311722343"
    assert workload_of(GENERIC_784).ident == "seq3-5616908461"
    assert workload_of(GENERIC_343).setup == ("A", "B", "A/foo", "B/C", "B/baz")


@pytest.mark.parametrize("text", [
    "move-dir.file A/C B/foo, sync",  # the setup makes no file at a directory's name
    "nested.mkdir A/C; move-dir.file A/C B/foo, sync",  # a directory there, not a file
    "move-dir.dir A/C B/C; move-dir.dir A/C B/C, sync",  # moved already
    "rename.dir A B; move-dir.dir B/C A/C, sync",  # A/C untouched when A moved: taken as absent, no B/C
    "third.rename A/foo A/baz; third.rename A/bar A/baz, sync",  # to a free name only
    "third.rename A/foo B/baz, sync",  # the third name of its own directory
    "move-dir.creat A/C; nested.creat A/C/foo, sync",  # A/C is a file
])
def test_what_the_tenth_table_cannot_do_is_no_workload(text):
    with pytest.raises(UsageError):
        workload_of(text)


def test_each_runs_as_its_first_table_twin():
    text = program(unnumbered(GENERIC_784))
    assert "\nmv -fT A/C B/C\n" in text and "\ntouch A/C\nsync A/C  # point 1: fsync A/C\n" in text
    assert "\nmv -fT A/C B/foo\nsync B/foo  # point 2: fsync B/foo\n" in text
    assert "\nln B/foo A/C/foo\nsync A  # point 2: fsync A\n" in program(unnumbered(GENERIC_498, synced=False))
    assert "\nmv -fT B/baz A/baz\n" in program(unnumbered(GENERIC_343))


@pytest.mark.parametrize("text, synced", [
    (GENERIC_343, True), (GENERIC_498, False), (GENERIC_782, True), (GENERIC_784, True), (GENERIC_784, False),
    ("third.rename A/foo A/baz; third.link A/baz A/foo; third.rename A/baz B/baz, fsync B/baz", True),
    ("nested-link A/C/bar B/bar; move-dir.dir A/C B/C, fsync B", False)])
def test_the_program_leaves_the_models_tree_on_the_host(host_tools, text, synced, tmp_path):
    program_leaves_the_models_tree(text, synced, tmp_path)


@pytest.mark.parametrize("text", [GENERIC_784, GENERIC_343])
def test_the_reproducers_steps_run_and_its_checks_pass_on_the_host(host_tools, text, tmp_path):
    reproducers_checks_pass(text, tmp_path)


def unnumbered(text: str, synced: bool = True) -> Workload:
    """The workload `text` names, without its id (a seq-3 id costs the whole seq-3 count)."""
    steps, sim = steps_of(text), Sim()
    assert all(apply(sim, step.op, i) for i, step in enumerate(steps, 1)), text
    return Workload(len(steps), 0, steps, ordered_setup(sim.setup), synced)


def state(text: str, synced: bool = True, changes: dict | None = None) -> dict:
    """The workload's last tree with `changes` (path -> Entry, or None: gone): a state worked
    out by hand."""
    view = dict(unnumbered(text, synced).trees[-1].view())
    for path, entry in (changes or {}).items():
        if entry is None:
            view.pop(path, None)
        else:
            view[path] = entry
    return view


def verdicts(text: str, k: int, view: dict, synced: bool = True) -> set[str]:
    workload = unnumbered(text, synced)
    return {judge(workload, fs, k, view).verdict for fs in LINUX}


def test_after_the_fsync_of_a_file_made_where_a_directory_was_its_name_is_owed():
    """generic/784's first point: the file at A/C, made after A/C moved to B/C."""
    text = "move-dir.dir A/C B/C; move-dir.creat A/C, fsync A/C"
    lost = state(text, changes={"A/C": None})
    assert verdicts(text, 1, lost) == {Verdict.DATA_LOSS}
    assert verdicts(text, 1, state(text)) == {Verdict.CLEAN}
    assert verdicts(text, 0, lost) == {Verdict.CLEAN}


def test_a_rule_that_takes_the_file_for_one_in_the_moved_directory_is_caught(monkeypatch):
    """The rule as it was before the tenth table: a name a directory was renamed from lies in
    that directory, whatever is there now."""
    text = "move-dir.dir A/C B/C; move-dir.creat A/C, fsync A/C"

    def wrong(self, path):
        moves = [oracle.plain(s.op) for s in self.workload.steps[:self.step]]
        return any(under(path, d) for op in moves if (op.family, op.variant) == ("rename", "dir") for d in op.args)

    monkeypatch.setattr(oracle.Context, "moved_with_a_dir", wrong)
    assert verdicts(text, 1, state(text, changes={"A/C": None})) == {Verdict.CLEAN}  # the loss slips through


def test_a_file_in_the_moved_directory_need_not_follow_it_on_its_own_fsync(monkeypatch):
    """A/C moved as `rename.dir A B` moves it: the fsync of a file in it need not persist the
    move (xfs), so a state with the file still under A/C is clean; a rule that counts only the
    first table's directory renames raises a false alarm there."""
    text = "nested.creat A/C/foo, sync; move-dir.dir A/C B/C, fsync-any B/C/foo"
    workload = unnumbered(text)
    old = workload.trees[1].view()
    assert judge(workload, "xfs", 2, old).verdict == Verdict.CLEAN

    def first_tables_only(self, path):
        steps = self.workload.steps[:self.step]
        return any(under(path, d) for s in steps if (s.op.family, s.op.variant) == ("rename", "dir") for d in s.op.args)

    monkeypatch.setattr(oracle.Context, "moved_with_a_dir", first_tables_only)
    assert judge(workload, "xfs", 2, old).verdict == Verdict.DATA_LOSS


def test_after_a_rename_to_the_third_name_and_its_fsync_the_new_name_is_owed_and_the_old_gone():
    moved = state(RENAMED_TO_BAZ)
    back = {p: e for p, e in moved.items() if p != "A/baz"}
    back["A/bar"] = moved["A/baz"]
    assert verdicts(RENAMED_TO_BAZ, 1, moved) == {Verdict.CLEAN}
    assert verdicts(RENAMED_TO_BAZ, 1, back) == {Verdict.DATA_LOSS}  # the rename lost: the data under bar
    assert verdicts(RENAMED_TO_BAZ, 0, back) == {Verdict.CLEAN}


def test_sync_owes_the_third_name_and_a_rule_blind_to_it_is_caught(monkeypatch):
    """Unsynced setup: nothing owed before the sync, so only sync-all owes the renamed file."""
    text = "third.rename A/foo A/baz, sync"
    lost = state(text, False, {"A/baz": None})
    assert verdicts(text, 1, lost, synced=False) == {Verdict.DATA_LOSS}
    assert verdicts(text, 0, lost, synced=False) == {Verdict.CLEAN}
    named = oracle.named
    monkeypatch.setattr(oracle, "named", lambda workload: tuple(p for p in named(workload) if p not in THIRD))
    assert verdicts(text, 1, lost, synced=False) == {Verdict.CLEAN}  # the loss slips through


def test_after_a_link_into_the_nested_directory_the_fsync_of_its_parent_owes_it():
    """generic/498: after `fsync A`, A/C (made in the same transaction) is owed; without it the
    directory is lost. The first fsync owes B/foo."""
    no_dir = state(GENERIC_498, False, {"A/C": None, "A/C/foo": None})
    no_dir["B/foo"] = replace(no_dir["B/foo"], nlink=1)
    assert verdicts(GENERIC_498, 2, no_dir, synced=False) == {Verdict.DATA_LOSS}
    assert verdicts(GENERIC_498, 1, no_dir, synced=False) == {Verdict.CLEAN}
    assert verdicts(GENERIC_498, 2, state(GENERIC_498, False), synced=False) == {Verdict.CLEAN}


def test_a_directory_moved_and_synced_is_owed_where_it_went():
    text = "move-dir.dir A/C B/C, sync"
    assert verdicts(text, 1, state(text)) == {Verdict.CLEAN}
    unmoved = state(text, changes={"B/C": None})
    unmoved["A/C"] = Entry(DIR, nlink=2)
    assert verdicts(text, 1, unmoved) == {Verdict.DATA_LOSS}
    assert verdicts(text, 0, unmoved) == {Verdict.CLEAN}


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
def test_the_models_own_states_after_the_tenth_tables_steps_are_clean(synced):
    space = Space(2, synced=synced)
    assert_own_states_clean(Space(1, synced=synced), range(1212, Space(1, *up_to(10)).total()))
    block = range(Space(2, *up_to(9)).total(), Space(2, *up_to(10)).total())
    assert_own_states_clean(space, sorted(random.Random(23).sample(block, 40)))
