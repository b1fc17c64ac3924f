"""The eighth operation table: `again`, a step with no operation whose point follows the last
step's point directly (a second fsync in a row, an fsync right after a sync: fstests
generic/034, generic/073, generic/690). The ids the first seven tables gave name the same
workloads (pinned by digests of the seven tables' code, seq 1 whole and a sample of seq 2; seq 3
is not walked here); the new ones come after them; its point owes what that point would owe
right after the last one, checked on hand-worked states, and the check is shown to catch
deliberately wrong rules. No VM."""

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
from plugpull.generate.ops import Op, Sim, up_to
from plugpull.generate.oracle import PROFILES, refusals
from plugpull.generate.points import followed
from plugpull.generate.program import program
from plugpull.generate.space import Space, Step, workload_of

# sha256 of "ID TEXT | SETUP\n" for every seq 1 workload of the first seven tables, and for 300
# seq 2 ids drawn from them by random.Random(53), as the seven tables' code gave them
SEVEN_TABLES = (1046, "bfe365b83bd703b747d5a6b17da3a7b2a88c8cfc0b6326f0a02e28a141b63644")
DRAWN = "92aef8f3eb6c543595023a7b24bf598970e58f74f9a08db21fb29258753c6bf2"

GENERIC_034 = "creat A/foo, fsync A; again, fsync-any A/foo"
GENERIC_073 = "write.append A/foo; rename.file B/bar A/bar, fsync B; again, fsync-any A/foo"
GENERIC_690 = "again, fsync-any A; symlink A/foo; rename.file A/foo A/bar, fsync A"



def test_every_seq1_id_of_the_seven_tables_names_the_same_workload():
    assert seq1_pin(7) == SEVEN_TABLES


def test_seq2_ids_of_the_seven_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(7, seed=53) == DRAWN


def test_the_eighth_tables_workloads_come_after_the_seven_tables_and_are_pinned():
    assert Space(1, *up_to(8)).total() == 1056  # the ninth table's come after
    assert [Space(1).workload(i).text() for i in (1046, 1047, 1054, 1055)] == [
        "again, fsync-any A/foo", "again, fdatasync-any A/foo", "again, fsync-any A", "again, fsync-any B"]
    assert Space(1).workload(1047).setup == ("A", "A/foo") and Space(1).workload(1055).setup == ("B",)
    assert workload_of(GENERIC_034).ident == "seq2-1520327"
    assert workload_of(GENERIC_073).ident == "seq3-2260143547"
    assert workload_of(GENERIC_690).ident == "seq3-2296882676"
    assert Space(2, ("again", "creat"), ("fsync", "fsync-any", "sync")).total() == 530
    old = Space(2, ("creat", "unlink"), ("fsync", "sync"))
    assert max(w.index for w in old.workloads()) < 1520311  # the seven tables' names give only their ids


@pytest.mark.parametrize("text", [
    "creat A/foo; again, fsync-any A/foo",  # after a step without a point: that is `creat A/foo, fsync A/foo`
    "again; creat A/foo, sync",  # no point of its own: a step that adds nothing
    "again, sync",  # the first step: a sync of nothing the setup made
    "again, fsync-any .",
    "creat A/foo, sync; again, fsync-any B/bar",  # not there, and a later point makes no setup
    "creat A/foo, sync; again, fsync A/foo",  # its points are of no step's own name
    "write.append A/foo; unlink-open A/foo, fsync-open A/foo; again, fsync-open A/foo",  # closed before its ack
])
def test_again_follows_a_point_and_names_what_is_there(text):
    with pytest.raises(UsageError):
        workload_of(text)


def test_two_in_a_row_and_after_every_table_are_workloads():
    for text in ("creat A/foo, fsync A; again, fsync-any A/foo; again, sync",
                 "write.append A/foo, sync; again, fsync-any A/foo",  # an fsync right after a sync
                 "mmapwrite.overwrite A/foo, msync A/foo; again, fdatasync-any A/foo",
                 "evict, sync; again, fsync-any A/foo",  # nothing touched yet: the setup makes it
                 "unlink-open A/foo, fsync-open A/foo; again, fsync-any A"):
        assert workload_of(text).text() == text


def test_again_changes_nothing_and_nothing_refuses_it():
    workload = workload_of(GENERIC_073)
    assert workload.trees[3] == workload.trees[2]
    assert all("again" not in refusals(fs) for fs in (*PROFILES, "xfs-2008", "ext3", "f2fs+compress"))


def test_its_points_are_sync_and_every_name_there_or_at_first_what_the_setup_makes():
    after = workload_of("creat A/foo, sync").trees[-1]
    kinds = [(p.kind, p.path) for p, _ in followed(Sim(after, pointed=True), Op("again", "", ()), last=False)]
    assert kinds == [("sync", None), ("fsync-any", "A/foo"), ("fdatasync-any", "A/foo"), ("fsync-any", "."),
                     ("fsync-any", "A")]  # never none: a step with no operation and no point adds nothing
    first = followed(Sim(), Op("again", "", ()), last=True)
    assert len(first) == 10 and all(p.path in sim.tree.paths and sim.setup for p, sim in first)


def test_the_program_runs_the_null_command_for_the_step():
    text = program(workload_of(GENERIC_034))
    assert "\n# 2: again\n: no operation, the point follows the last one\nsync A/foo  # point 2: fsync-any A/foo\n" in text


@pytest.mark.parametrize("text, synced", [(GENERIC_034, True), (GENERIC_073, True), (GENERIC_690, False)])
def test_the_program_leaves_the_models_tree_on_the_host(host_tools, text, synced, tmp_path):
    program_leaves_the_models_tree(text, synced, tmp_path)


def test_the_reproducers_steps_run_and_its_checks_pass_on_the_host(host_tools, tmp_path):
    reproducers_checks_pass(GENERIC_073, tmp_path)


def owes_what_the_point_owes_right_after_the_last(text: str) -> None:
    """Each `again` point owes, on every profile, what the same point owes placed right after
    the step before it (its own point taken away): the same facts by the same rules."""
    workload = workload_of(text)
    for i, step in enumerate(workload.steps, 1):
        if step.op.family != "again" or i == 1:
            continue
        before = workload.steps[i - 2]
        twin = replace(workload, steps=(*workload.steps[:i - 2], Step(before.op, step.persist)))
        point = workload.points().index(i) + 1
        for fs in PROFILES:
            assert oracle.owed_at(workload, fs, point) == oracle.owed_at(twin, fs, point - 1), (text, fs)


def the_second_fsync_owes_the_append(text: str = GENERIC_073) -> None:
    """generic/073's state: the append to A/foo lost, the rename there. Clean after the fsync of
    B (it owes nothing of A/foo's data), failing on every profile after the fsync of A/foo."""
    workload = workload_of(text)
    state = {**workload.trees[-1].view(), "A/foo": workload.trees[0].entry("A/foo")}
    assert {judge(workload, fs, 1, state).verdict for fs in PROFILES} == {Verdict.CLEAN}
    assert {judge(workload, fs, 2, state).verdict for fs in PROFILES} == {Verdict.DATA_LOSS}
    assert {judge(workload, fs, 2, workload.trees[-1].view()).verdict for fs in PROFILES} == {Verdict.CLEAN}


@pytest.mark.parametrize("text", [GENERIC_034, GENERIC_073, "write.overwrite B/bar, fsync B/bar; again, sync",
                                  "link A/foo A/bar, sync; again, fsync-any A; again, fdatasync-any A/bar"])
def test_a_point_after_no_operation_owes_what_it_owes_right_after_the_last(text):
    owes_what_the_point_owes_right_after_the_last(text)


def test_the_second_fsync_in_a_row_owes_its_files_data():
    the_second_fsync_owes_the_append()


def test_the_checks_catch_a_rule_that_takes_a_second_point_for_a_no_op(monkeypatch):
    """A wrong rule: a point right after a point owes nothing new (what btrfs did when it found
    the inode already logged, generic/073)."""
    real = oracle.owed_at

    def nothing_new(workload, fs, point):
        step = oracle.end_step(workload, point)
        return {} if point and workload.steps[step - 1].op.family == "again" else real(workload, fs, point)

    monkeypatch.setattr(oracle, "owed_at", nothing_new)
    with pytest.raises(AssertionError):
        the_second_fsync_owes_the_append()
    monkeypatch.setattr(oracle, "owed_at", real)
    monkeypatch.setattr(oracle, "RULES", tuple(replace(r, owes=lambda ctx: []) if r.name == "fsync-data" else r
                                               for r in oracle.RULES))
    with pytest.raises(AssertionError):
        the_second_fsync_owes_the_append()


def test_the_checks_catch_a_rule_that_takes_a_second_point_for_a_sync(monkeypatch):
    """A wrong rule: a point right after a point flushes everything, as a sync does."""
    real = oracle.owed_at

    def synced(workload, fs, point):
        facts = real(workload, fs, point)
        step = oracle.end_step(workload, point)
        if point and workload.steps[step - 1].op.family == "again" and fs in oracle.LINUX:
            ctx = oracle.Context(workload, step, workload.trees[step], None)
            facts.update({(p, n): (v, "again-syncs") for p, n, v in oracle.sync_all(ctx)})
        return facts

    monkeypatch.setattr(oracle, "owed_at", synced)
    with pytest.raises(AssertionError):
        owes_what_the_point_owes_right_after_the_last(GENERIC_034)


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
def test_the_models_own_states_after_the_eighth_tables_steps_are_clean(synced):
    space = Space(2, synced=synced)
    block = range(Space(2, *up_to(7)).total(), Space(2, *up_to(8)).total())
    assert_own_states_clean(Space(1, synced=synced), range(1046, 1056))
    assert_own_states_clean(space, sorted(random.Random(19).sample(block, 40)))
