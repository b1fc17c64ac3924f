"""The fifth operation table: ACE's nested directory A/C (made, a file made in it, moved into it
and out of it, unlinked in it), with fsync of the parent (A) and of a sibling file among the
persistence points after it. The ids the first four tables gave name the same workloads (pinned
by digests of the four tables' code), the new ones come after them and are pinned; the guest's
and the reproducer's commands do on the host's own filesystem what the model says; and what
each point owes, with a hand-worked state that lost it (data-loss) and one the filesystem may
give (clean). No VM."""

import hashlib
import random
from dataclasses import replace

import pytest
from tests.unit.generate.pins import line
from tests.unit.generate.test_generate_later import host_tools, program_leaves_the_models_tree, reproducers_checks_pass  # noqa: F401
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean, table_block

from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.generate.judge import judge
from plugpull.generate.oracle import LINUX, PROFILES
from plugpull.generate.ops import NESTED_OPS, up_to
from plugpull.generate.space import Space, workload_of
from plugpull.generate.tree import DIR, FILE

# sha256 of "ID TEXT | SETUP\n" for every workload of the first four tables (seq 1 and 2), and
# for ids drawn from them by random.Random(44) (seq 3), as the four tables' code gave them
FOUR_TABLES_DIGESTS = {1: (476, "563148d26005e5c8060037eb55faba58ebbd4ef55d95515bfefccd5fd6c45145"),
                       2: (231962, "ff68485c10d5957c6fb422a45a5607726bda58810482205787fc2f920487a596")}
SEQ3_DIGESTS = {300: "10bae8e59b36d0f745eb73ee2cf83a3ac2a6e41bee909dbfd8510dd42e4fd551",
                3000: "7c40bc19fc1bdc77f6016969d6c6922ef7a50ebdfd16c87cfed955be7db25574"}



@pytest.mark.parametrize("seq", [1, 2])
def test_every_seq1_and_seq2_id_of_the_four_tables_names_the_same_workload(seq):
    digest, count = hashlib.sha256(), 0
    for workload in Space(seq, *up_to(4)).workloads():
        digest.update(line(workload))
        count += 1
    assert (count, digest.hexdigest()) == FOUR_TABLES_DIGESTS[seq]


def seq3_digest(k: int) -> str:
    space, whole = Space(3, *up_to(4)), Space(3)  # a Space of seq 3 takes seconds to count
    digest = hashlib.sha256()
    for index in sorted(random.Random(44).sample(range(space.total()), k)):
        digest.update(line(whole.workload(index)))
    return digest.hexdigest()


def test_seq3_ids_of_the_four_tables_drawn_at_random_name_the_same_workloads():
    assert seq3_digest(300) == SEQ3_DIGESTS[300]


@pytest.mark.slow
def test_three_thousand_seq3_ids_of_the_four_tables_name_the_same_workloads():
    assert seq3_digest(3000) == SEQ3_DIGESTS[3000]


def test_the_nested_workloads_come_after_the_four_tables_and_are_pinned():
    assert [op.text() for op in NESTED_OPS[:4]] == [
        "nested.mkdir A/C", "nested.creat A/C/foo", "nested.creat A/C/bar", "nested.rename A/foo A/C/foo"]
    assert NESTED_OPS[7].text() == "nested.rename A/C/foo A/foo" and len(NESTED_OPS) == 13
    assert [Space(1).workload(i).text() for i in (476, 477, 478, 538)] == [
        "nested.mkdir A/C, sync", "nested.mkdir A/C, fsync A/C", "nested.mkdir A/C, fsync A",
        "nested.unlink A/C/bar, fsync A"]
    assert [Space(seq, *up_to(5)).total() for seq in (1, 2, 3)] == [539, 300637, 147255276]
    assert Space(2).workload(231962).text() == "creat A/foo; nested.mkdir A/C, sync"
    assert workload_of("nested.creat A/C/bar; nested.creat A/C/foo, fsync A/C/bar").ident == "seq2-271398"
    assert Space(3).locate(Space(3).workload(120000000).steps) == 120000000
    assert Space(2, ("nested",), ("fsync", "fdatasync", "sync")).total() == 3644


def test_old_names_give_only_old_ids():
    """`--ops` without `nested` is a filter of the four tables: the ids it gave before."""
    old = Space(2, ("creat", "rename"), ("fsync",))
    listed = [w.index for w in old.workloads()]
    assert len(listed) == old.total() and max(listed) < 231962
    grown = [w.index for w in Space(2, ("creat", "rename", "nested"), ("fsync",)).workloads()]
    assert set(listed) < set(grown) and min(set(grown) - set(listed)) >= 231962


@pytest.mark.parametrize("text", [
    "nested.creat A/C/foo, fsync A/C/bar",  # the sibling is no file: untouched names are not there
    "creat A/bar; write.append A/foo, fsync A/bar",  # a sibling's fsync follows only a nested operation
    "nested.mkdir A/C; nested.mkdir A/C, sync",  # made twice
    "rmdir A; nested.creat A/C/foo, sync",  # no A
    "nested.mkdir A/C; rmdir A, sync",  # A holds A/C: not empty
    "nested.unlink A/C/foo; nested.rename A/C/foo A/foo, sync",  # moved after it was unlinked
])
def test_a_nested_operation_that_cannot_run_there_is_no_workload(text):
    with pytest.raises(UsageError):
        workload_of(text)


def test_a_nested_workloads_setup_makes_A_C_and_its_files_and_a_rename_of_A_takes_them():
    assert workload_of("nested.rename A/C/foo B/foo, sync").setup == ("A", "B", "A/C", "A/C/foo")
    tree = workload_of("nested.creat A/C/bar; rename.dir A B, sync").trees[-1]
    assert (tree.kind("B/C"), tree.kind("B/C/bar"), tree.kind("A/C")) == (DIR, FILE, None)


HOST = ["nested.mkdir A/C; nested.creat A/C/foo, fsync A/C/foo",
        "nested.rename A/foo A/C/foo, fsync A; nested.rename A/C/bar B/bar, fsync A/C",
        "nested.creat A/C/bar; nested.unlink A/C/foo, fsync A/C/bar; rename.dir A B, sync"]


@pytest.mark.parametrize("synced", [True, False])
@pytest.mark.parametrize("text", HOST)
def test_the_guest_program_leaves_the_models_tree(host_tools, text, synced, tmp_path):
    program_leaves_the_models_tree(text, synced, tmp_path)


@pytest.mark.parametrize("text", HOST)
def test_the_reproducers_commands_leave_a_tree_its_checks_pass(host_tools, text, tmp_path):
    reproducers_checks_pass(text, tmp_path)


def final(text: str, synced: bool = True) -> dict:
    return workload_of(text, synced).trees[-1].view()


def without(state: dict, *paths: str) -> dict:
    return {p: e for p, e in state.items() if p not in paths}


def verdicts(text: str, k, state, synced: bool = True) -> dict:
    return {fs: judge(workload_of(text, synced), fs, k, state).verdict for fs in PROFILES}


def lost_on_linux(text: str, state: dict, rule: str, k: int = 1) -> None:
    """`state` is data-loss by `rule` on every Linux profile and clean under posix; the
    model's own last state is clean everywhere."""
    assert set(verdicts(text, k, final(text)).values()) == {Verdict.CLEAN}
    for fs in LINUX:
        found = judge(workload_of(text), fs, k, state)
        assert found.verdict == Verdict.DATA_LOSS and rule in found.reason, (fs, found.reason)
    assert judge(workload_of(text), "posix", k, state).verdict == Verdict.CLEAN


@pytest.mark.parametrize("sync, rule", [("fsync", "fsync-names"), ("fdatasync", "fdatasync-new-name")])
def test_a_new_file_in_a_new_nested_directory_is_owed_with_the_directory(sync, rule):
    """fsync(2) of a new file persists its name (relied on: ext4 commits the transaction that
    made A/C too, xfs forces the log past the mkdir, btrfs logs the new ancestors, f2fs
    checkpoints for a parent not yet checkpointed); a file has no name without its directory,
    so a state without A/C has lost it."""
    text = f"nested.mkdir A/C; nested.creat A/C/foo, {sync} A/C/foo"
    lost_on_linux(text, without(final(text), "A/C", "A/C/foo"), rule)
    assert set(verdicts(text, 0, without(final(text), "A/C", "A/C/foo")).values()) == {Verdict.CLEAN}


@pytest.mark.parametrize("text, gone", [
    ("nested.creat A/C/foo, fsync A/C", ("A/C/foo",)),  # the child's fsync owes the file made in it
    ("nested.mkdir A/C, fsync A", ("A/C",)),  # the parent's fsync owes the directory made in it
    ("nested.rename A/C/bar A/bar, fsync A", ("A/bar",)),  # ... and a file moved out of A/C into it
    ("nested.rename B/foo A/C/foo, fsync A/C", ("A/C/foo",)),  # a file moved in from B
])
def test_a_directory_fsync_owes_the_entry_it_gained(text, gone):
    lost_on_linux(text, without(final(text), *gone), "fsync-dir-entries")


@pytest.mark.parametrize("text", [
    "nested.unlink A/C/foo, fsync A/C",  # unlinked in the child
    "nested.rename A/C/foo B/foo, fsync A/C",  # moved out of the child
    "nested.rename A/foo A/C/foo, fsync A",  # moved from the parent into the child
])
def test_a_directory_fsync_owes_the_entry_it_lost_gone(text):
    """fsync(2) of the directory persists its entries: the name it lost is absent, so the
    operation undone is data-loss."""
    lost_on_linux(text, workload_of(text).trees[0].view(), "fsync-dir-entries")


def test_a_file_moved_into_the_nested_directory_and_fsynced_has_its_new_name_and_not_its_old():
    """fsync-names: the moved file's name now (A/C/foo) is owed, and the name it lost is no
    longer it: the rename undone is data-loss on Linux; a file under neither name too (held)."""
    text = "nested.rename A/foo A/C/foo, fsync A/C/foo"
    undone = workload_of(text).trees[0].view()
    lost_on_linux(text, undone, "fsync-names")
    for fs in LINUX:
        found = judge(workload_of(text), fs, 1, without(final(text), "A/C/foo"))
        assert found.verdict == Verdict.DATA_LOSS, fs


def test_the_parents_fsync_owes_nothing_of_a_grandchild():
    """fsync of A persists A's entries, not A/C's: a file unlinked or made in A/C may still be
    as it was (a state the filesystem may give)."""
    unlinked = "nested.unlink A/C/foo, fsync A"
    kept = {**final(unlinked), "A/C/foo": workload_of(unlinked).trees[0].entry("A/C/foo")}
    assert set(verdicts(unlinked, 1, kept).values()) == {Verdict.CLEAN}
    made = "nested.creat A/C/foo, fsync A"
    assert set(verdicts(made, 1, without(final(made), "A/C/foo")).values()) == {Verdict.CLEAN}
    child = "nested.unlink A/C/foo, fsync A/C"
    assert Verdict.DATA_LOSS in verdicts(child, 1, kept).values()  # the child's fsync does owe it


def test_a_siblings_fsync_owes_the_sibling_and_nothing_of_the_file_beside_it():
    """ACE's fsync of a sibling: fsync(2) of A/C/bar owes A/C/bar's own facts (its name: the
    workload made it, fsync-names), not the file made beside it."""
    text = "nested.creat A/C/bar; nested.creat A/C/foo, fsync A/C/bar"
    lost_on_linux(text, without(final(text), "A/C/bar"), "fsync-names")
    assert set(verdicts(text, 1, without(final(text), "A/C/foo")).values()) == {Verdict.CLEAN}
    written = "nested.creat A/C/bar; nested.unlink A/C/foo, fsync A/C/bar"
    kept = {**final(written), "A/C/foo": workload_of(written).trees[0].entry("A/C/foo")}
    assert set(verdicts(written, 1, kept).values()) == {Verdict.CLEAN}  # the unlink beside it is not owed


def test_a_sibling_made_by_an_unsynced_setup_is_owed_its_name_by_its_fsync():
    text = "nested.creat A/C/bar; nested.unlink A/C/foo, fsync A/C/bar"
    for fs in LINUX:
        found = judge(workload_of(text, False), fs, 1, without(final(text, False), "A/C/bar"))
        assert found.verdict == Verdict.DATA_LOSS and "fsync-names" in found.reason


def test_sync_owes_the_nested_files_where_a_rename_of_A_took_them():
    text = "nested.creat A/C/foo, fsync A/C/foo; rename.dir A B, sync"
    lost_on_linux(text, without(final(text), "B/C/foo"), "sync-all", k=2)
    state = {**without(final(text), "B/C/foo"), "A/C/foo": replace(final(text)["B/C/foo"])}
    assert judge(workload_of(text), "ext4", 2, state).verdict != Verdict.CLEAN


def test_an_old_workloads_owed_facts_name_no_nested_name():
    from plugpull.generate.oracle import owed
    for text in ("mkdir A, fsync A", "creat A/foo, sync", "rename.dir A B, fsync ."):
        assert not [o for o in owed(workload_of(text), "ext4", 1) if "/C" in o.path or o.path.endswith("C")]


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
@pytest.mark.parametrize("seq, k", [(1, None), (2, 40), (3, 15)])
def test_the_models_own_states_after_nested_operations_are_clean(seq, k, synced):
    assert_own_states_clean(Space(seq, synced=synced), table_block(seq, 5, k, seed=14))


@pytest.mark.slow
@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
@pytest.mark.parametrize("seq, k", [(2, 1500), (3, 300)])
def test_the_models_own_states_over_thousands_of_nested_workloads_are_clean(seq, k, synced):
    assert_own_states_clean(Space(seq, synced=synced), table_block(seq, 5, k, seed=15))
