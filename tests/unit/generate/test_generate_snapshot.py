"""The twelfth operation table: btrfs snapshots of the root subvolume made and deleted
(`snapshot`), fstests btrfs/118 and btrfs/120. The ids the first eleven tables gave name the same
workloads (digests of the eleven tables' code, seq 1 whole and a sample of seq 2); the new ones
come after them; the count's memo tells a snapshot apart (a wrong key is caught); what a point
owes after each step is checked on states worked out by hand, and shown to fail with a
deliberately wrong rule; every other filesystem refuses the family. No VM."""

import random

import pytest
from tests.unit.generate.pins import seq1_pin, seq2_drawn_pin
from tests.unit.generate.test_generate_names import state, unnumbered
from tests.unit.generate.test_generate_shapes import brute_force
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean

from plugpull.check.verdict import Verdict
from plugpull.generate import oracle, space as space_module, workload as workload_module
from plugpull.generate.judge import judge
from plugpull.generate.ops import Sim, apply, up_to
from plugpull.generate.oracle import on_profile, refusals
from plugpull.generate.program import op_command, program
from plugpull.generate.shapes import NO_POINT, Shape, at, shape_named
from plugpull.generate.space import Space, steps_of, workload_of
from plugpull.generate.tree import DIR, SNAPS, Entry, read_tree
from plugpull.reproducer.shell import SH_TOOLS

# sha256 of "ID TEXT | SETUP\n" for every seq 1 workload of the first eleven tables, and for 300
# seq 2 ids drawn from them by random.Random(12), as the eleven tables' code gave them
ELEVEN_TABLES = (1420, "c14bbf908fffa422429540b4dd1584599fb08c783d424197626f3b5400e04414")
DRAWN = "f3bde3dec3ef4f383a76800e1f2f620fb70af4f11091b2d32e0429917774a531"

BTRFS_118 = "snapshot.make A/snap; snapshot.delete A/snap, fsync A"  # testdir's half; unsynced setup
BTRFS_118_ROOT = "snapshot.make snap; snapshot.delete snap, fsync ."
BTRFS_120 = "snapshot.make A/snap; snapshot.delete A/snap; rmdir A; mkdir A, fsync A"
MADE = "snapshot.make A/snap, fsync A"


def test_every_seq1_id_of_the_eleven_tables_names_the_same_workload():
    assert seq1_pin(11) == ELEVEN_TABLES


def test_seq2_ids_of_the_eleven_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(11, seed=12) == DRAWN


def test_the_snapshot_workloads_come_after_the_eleven_tables_and_are_pinned():
    new = [w.text() for w in Space(1).workloads() if 1420 <= w.index < 1425]
    assert new == ["snapshot.make snap, sync", "snapshot.make snap, fsync .", "snapshot.make A/snap, sync",
                   "snapshot.make A/snap, fsync A", "snapshot.make A/snap, fsync-any ."]
    assert Space(2, ("snapshot",), ("fsync", "sync")).total() == 24
    assert workload_of(BTRFS_118, synced=False).ident == "seq2u-2942688"
    assert workload_of(BTRFS_118_ROOT).ident == "seq2-2938367"
    assert workload_of(BTRFS_118, synced=False).setup == ("A",)
    snapshot_rmdir = Space(4, shape=shape_named("snapshot-rmdir"))
    assert snapshot_rmdir.total() == 27
    assert snapshot_rmdir.workload(19).text() == BTRFS_120


@pytest.mark.parametrize("text", [
    "snapshot.delete snap, sync",  # the setup makes no snapshot
    "snapshot.make snap; snapshot.make snap, sync",  # the name is taken
    "snapshot.make A/snap; rmdir A, sync",  # A holds the snapshot: not empty
    "snapshot.make A/snap; rename.dir A B; snapshot.delete A/snap, sync",  # moved to B/snap
    "mkdir A; rmdir A; snapshot.make A/snap, sync",  # no directory A
])
def test_what_the_twelfth_table_cannot_do_is_no_workload(text):
    """On the model, step by step (an id of three steps would cost the whole seq-3 count)."""
    sim = Sim()
    assert not all(apply(sim, step.op, i) for i, step in enumerate(steps_of(text), 1))


def test_a_snapshot_moves_with_its_directory():
    workload = unnumbered("snapshot.make A/snap; rename.dir A B, fsync B")
    assert workload.trees[-1].kind("B/snap") == DIR and workload.trees[-1].kind("A/snap") is None


def test_counts_tell_a_snapshot_apart_and_a_key_blind_to_it_is_caught(monkeypatch):
    """The memoised count of a small shape is the plain recursion's; with a key that leaves the
    snapshots out, a state with A/snap and one where it was deleted share a count, and the
    count goes wrong (rmdir A is valid in only one of them)."""
    steps = at(("snapshot", "rmdir"), (NO_POINT, "sync"))
    shape = Shape("snaps", "a test's", (steps, steps, steps))
    assert Space(3, shape=shape).total() == len(brute_force(shape)) == 120
    monkeypatch.setattr(space_module, "_COUNTS", {})  # and none kept on disk: they are of the rules as written
    monkeypatch.setattr(space_module, "_STORED", {})
    monkeypatch.setitem(space_module._KEEP, "on", False)
    monkeypatch.setattr(Sim, "key", lambda self, sized=True, nested=True, third=True:
                        self._shape(sized, ("A", "B", "A/foo", "A/bar", "B/foo", "B/bar")))
    assert Space(3, shape=shape).total() == 116


def test_every_filesystem_but_btrfs_refuses_snapshots():
    for fs in ("ext4", "ext3", "xfs", "xfs-2008", "f2fs", "f2fs-strict"):
        assert "snapshot" in refusals(fs), fs
    assert "snapshot" not in refusals("btrfs")
    workload = workload_of(BTRFS_118_ROOT)
    assert "btrfs subvolume snapshot .. snap >/dev/null\n" in program(workload)
    assert "btrfs subvolume delete snap >/dev/null\nsync .  # point 1: fsync .\n" in program(workload)
    refused = program(on_profile(workload, "xfs"))
    assert 'if btrfs subvolume snapshot .. snap >/dev/null 2>/dev/null; then echo "not refused' in refused
    assert on_profile(workload, "xfs").trees[-1].kind("snap") is None


def test_a_reproducer_snapshots_the_mount_point():
    step = unnumbered(BTRFS_118)
    assert op_command(step.steps[0].op, 1, step.trees[0], SH_TOOLS) == \
        'btrfs subvolume snapshot "$mnt" "$mnt"/A/snap >/dev/null'


def verdict(text: str, k: int, view: dict, synced: bool = True) -> Verdict:
    """On btrfs: every other profile refuses the steps, so no snapshot is owed there."""
    return judge(unnumbered(text, synced), "btrfs", k, view).verdict


def test_after_a_snapshot_and_its_parents_fsync_its_name_is_owed():
    lost = state(MADE, changes={"A/snap": None})
    assert verdict(MADE, 1, lost) == Verdict.DATA_LOSS
    assert verdict(MADE, 1, state(MADE)) == Verdict.CLEAN
    assert verdict(MADE, 0, lost) == Verdict.CLEAN


def test_after_a_deletion_and_its_parents_fsync_the_snapshot_is_gone():
    """btrfs/118: the snapshot not there after the log's replay."""
    kept = state(BTRFS_118, False, {"A/snap": Entry(DIR, nlink=1)})
    assert verdict(BTRFS_118, 1, kept, synced=False) == Verdict.DATA_LOSS
    assert verdict(BTRFS_118, 1, state(BTRFS_118, False), synced=False) == Verdict.CLEAN
    assert verdict(BTRFS_118, 0, kept, synced=False) == Verdict.CLEAN


def test_a_rule_blind_to_the_snapshots_names_is_caught(monkeypatch):
    named = oracle.named
    monkeypatch.setattr(oracle, "named", lambda workload: tuple(p for p in named(workload) if p not in SNAPS))
    assert verdict(MADE, 1, state(MADE, changes={"A/snap": None})) == Verdict.CLEAN  # the loss slips through
    kept = state(BTRFS_118, False, {"A/snap": Entry(DIR, nlink=1)})
    assert verdict(BTRFS_118, 1, kept, synced=False) == Verdict.CLEAN


def test_a_snapshots_own_subtree_is_not_read(tmp_path):
    """What a snapshot holds is not judged: the checker reads its name, nothing below it (here
    a copy of the work directory with a file the model never had)."""
    (tmp_path / "A/snap/pp/A").mkdir(parents=True)
    (tmp_path / "A/snap/pp/A/foo").write_bytes(b"x")
    recovered = read_tree(tmp_path)
    assert sorted(recovered) == ["A", "A/snap"]
    assert judge(unnumbered(MADE), "btrfs", 1, recovered).verdict == Verdict.CLEAN


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
def test_the_models_own_states_after_the_snapshot_steps_are_clean(synced):
    assert_own_states_clean(Space(1, synced=synced), range(1420, 1425))
    space = Space(2, synced=synced)
    block = range(Space(2, *up_to(11)).total(), space.count())
    assert_own_states_clean(space, sorted(random.Random(31).sample(block, 40)))
    assert_own_states_clean(Space(4, synced=synced, shape=shape_named("snapshot-rmdir")), range(27))


def test_the_checkers_walk_skips_what_a_snapshot_holds(monkeypatch):
    """pp-tree walks into a snapshot (a copy of the root subvolume, the work directory in it):
    those names are neither judged nor strays; a walk that takes them for strays breaks the
    invariant on every state that has the snapshot."""
    walk = "entry A 41ed 0 1 256 - -\nentry A/snap 41ed 0 1 256 - -\nentry A/snap/pp 41ed 0 1 257 - -\n" \
           "entry A/snap/pp/A/foo 81a4 1 1 260 " + "0" * 64 + " -\nxattr A/snap/pp/A/foo user.pp v1\n"
    tree, strays = workload_module.collected(walk)
    assert sorted(tree) == ["A", "A/snap"] and strays == []
    monkeypatch.setattr(workload_module, "in_snapshot", lambda path: False)
    assert workload_module.collected(walk)[1] == ["A/snap/pp", "A/snap/pp/A/foo"]
