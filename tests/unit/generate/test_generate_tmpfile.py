"""The thirteenth operation table: an O_TMPFILE file written and fsynced (`tmpfile`), fstests
generic/509. The ids the first twelve tables gave name the same workloads (digests of the twelve
tables' code, seq 1 whole and a sample of seq 2); the new ones come after them; the step changes
no name, and a rule that gave the file a name is caught; no filesystem refuses it. No VM."""

import random

import pytest
from tests.unit.generate.pins import seq1_pin, seq2_drawn_pin
from tests.unit.generate.test_generate_names import state, unnumbered
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean

from plugpull.check.verdict import Verdict
from plugpull.generate import ops
from plugpull.generate.judge import judge
from plugpull.generate.ops import Sim, apply, up_to
from plugpull.generate.oracle import PROFILES, on_profile, refusals
from plugpull.generate.program import op_command, program
from plugpull.generate.space import Space, steps_of, workload_of
from plugpull.generate.tree import FILE, Entry, Inode, digest
from plugpull.reproducer.shell import SH_TOOLS
from plugpull.testbed.fs import FILESYSTEMS

# sha256 of "ID TEXT | SETUP\n" for every seq 1 workload of the first twelve tables, and for 300
# seq 2 ids drawn from them by random.Random(13), as the twelve tables' code gave them
TWELVE_TABLES = (1425, "5866c2568553097acdf3226b1deb5286875998f31b3bd02a4c5766887fc79875")
DRAWN = "22667c86cd138d0994d725690f9fc3bf2b3ba1dd367f7f61865bcfd119ec2985"

GENERIC_509 = "tmpfile.fsync A, fsync A"  # the directory's fsync is the point the ack follows
COMMAND = 'xfs_io -T -c "pwrite -q -S 0x61 0 65536" -c fsync A'


def test_every_seq1_id_of_the_twelve_tables_names_the_same_workload():
    assert seq1_pin(12) == TWELVE_TABLES


def test_seq2_ids_of_the_twelve_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(12, seed=13) == DRAWN


def test_the_tmpfile_workloads_come_after_the_twelve_tables():
    new = [w.text() for w in Space(1).workloads() if 1425 <= w.index < 1431]  # the fourteenth's come after
    assert new == ["tmpfile.fsync A, sync", GENERIC_509, "tmpfile.fsync A, fsync-any .",
                   "tmpfile.fsync B, sync", "tmpfile.fsync B, fsync B", "tmpfile.fsync B, fsync-any ."]
    assert workload_of(GENERIC_509).ident == "seq1-001426"
    assert workload_of(GENERIC_509).setup == ("A",)


def test_the_program_writes_and_fsyncs_a_tmpfile_in_the_directory():
    workload = workload_of(GENERIC_509)
    assert f"{COMMAND}\nsync A  # point 1: fsync A\n" in program(workload)
    assert op_command(workload.steps[0].op, 1, workload.trees[0], SH_TOOLS) == \
        'xfs_io -T -c "pwrite -q -S 0x61 0 65536" -c fsync "$mnt"/A'


def test_no_filesystem_refuses_o_tmpfile():
    for fs in (*FILESYSTEMS, *PROFILES):
        assert "tmpfile" not in refusals(fs), fs


def test_the_step_changes_no_name_and_wants_its_directory():
    workload = unnumbered(GENERIC_509)
    assert workload.trees[-1].view() == workload.trees[0].view()
    sim = Sim()
    assert not all(apply(sim, step.op, i) for i, step in enumerate(steps_of("rmdir A; tmpfile.fsync A, sync"), 1))


def test_a_tmpfile_that_shows_up_under_a_name_is_not_clean():
    """The file replayed under a name: at a model name the point owes absent, or at a name no
    point has (a stray)."""
    data = b"a" * 65536
    named = Entry(FILE, size=len(data), digest=digest(data), nlink=1)
    assert judge(unnumbered(GENERIC_509), "btrfs", 1, state(GENERIC_509)).verdict == Verdict.CLEAN
    assert judge(unnumbered(GENERIC_509), "btrfs", 1, state(GENERIC_509, changes={"A/foo": named})).verdict \
        == Verdict.INCONSISTENT  # a file at A/foo is in no tree of the workload


def test_a_rule_that_gives_the_tmpfile_a_name_is_caught(monkeypatch):
    """A model in which the step made A/foo with the bytes written: the true state (A empty)
    is then judged a loss."""
    def named_step(sim, op):
        sim.tree.paths["A/foo"] = sim.tree.new_inode(Inode(FILE, b"a" * 65536))
        return sim.exists("A", ("dir",))
    monkeypatch.setitem(ops.OWN_STEPS, "tmpfile", named_step)
    on_profile.cache_clear()  # it holds the workload as the right rule made it
    try:
        found = judge(unnumbered(GENERIC_509), "btrfs", 1, state("mkdir A, sync"))
    finally:
        on_profile.cache_clear()
    assert found.verdict == Verdict.DATA_LOSS and "A/foo" in found.reason


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
def test_the_models_own_states_after_the_tmpfile_step_are_clean(synced):
    assert_own_states_clean(Space(1, synced=synced), range(1425, 1431))
    space = Space(2, synced=synced)
    block = range(Space(2, *up_to(12)).total(), space.count())
    assert_own_states_clean(space, sorted(random.Random(37).sample(block, 40)))
