"""The fourteenth operation table: a preallocation, hole punches, writes and truncates of A/foo
at btrfs/206's offsets and generic/695's scaled by 1/512 (`holes`), and the two shapes that hold
those tests. The ids the first twelve tables gave name the same workloads (digests of the twelve
tables' code, seq 1 whole and a sample of seq 2); the new ones come after them; the data each
variant leaves is worked out by hand, the check is shown to catch generic/695's stale range
after its fsync, and a model that does not punch is shown to let it through. No VM."""

import random

import pytest
from tests.unit.generate.pins import seq1_pin, seq2_drawn_pin
from tests.unit.generate.test_generate_later import host_tools, program_leaves_its_tree  # noqa: F401
from tests.unit.generate.test_generate_names import state, unnumbered
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean

from plugpull.check.verdict import Verdict
from plugpull.generate import ops
from plugpull.generate.judge import judge
from plugpull.generate.oracle import on_profile, refusals
from plugpull.generate.ops import up_to
from plugpull.generate.shapes import shape_named
from plugpull.generate.space import Space
from plugpull.generate.tree import Entry, FILE, digest

# sha256 of "ID TEXT | SETUP\n" for every seq 1 workload of the first twelve tables, and for 300
# seq 2 ids drawn from them by random.Random(13), as the twelve tables' code gave them
TWELVE_TABLES = (1425, "5866c2568553097acdf3226b1deb5286875998f31b3bd02a4c5766887fc79875")
DRAWN = "22667c86cd138d0994d725690f9fc3bf2b3ba1dd367f7f61865bcfd119ec2985"

BTRFS_206 = "creat A/foo; holes.falloc-k A/foo; holes.punch A/foo; write.overwrite A/foo; holes.write A/foo; " \
            "holes.truncate A/foo, sync"
GENERIC_695 = "creat A/foo; holes.grow A/foo; holes.write-mid A/foo, sync; holes.punch A/foo; " \
              "holes.punch-end A/foo, fsync A/foo"
KIB = 1024


def test_every_seq1_id_of_the_twelve_tables_names_the_same_workload():
    assert seq1_pin(12) == TWELVE_TABLES


def test_seq2_ids_of_the_twelve_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(12, seed=13) == DRAWN


def test_the_holes_workloads_come_after_the_thirteen_tables_and_are_pinned():
    new = [w for w in Space(1).workloads() if 1431 <= w.index < 1466]  # the fifteenth's and sixteenth's come after
    assert len(new) == 35 and {w.steps[0].op.family for w in new} == {"holes"}
    assert new[0].text() == "holes.falloc-k A/foo, sync" and new[-1].text() == "holes.punch-end A/foo, fsync-any A"
    assert {w.steps[0].op.args for w in new} == {("A/foo",)}  # one file: each row grows every count
    assert (Space(1, *up_to(14)).total(), Space(2, *up_to(14)).total()) == (1466, 3141549)
    assert Space(2, *up_to(13)).total() == 2980110 and Space(2, *up_to(12)).total() == 2947163


def test_the_shapes_hold_btrfs_206_and_generic_695():
    prealloc, merge = Space(6, shape=shape_named("prealloc-truncate")), Space(5, shape=shape_named("hole-merge"))
    assert (prealloc.total(), merge.total()) == (2177364, 38416)
    assert prealloc.workload(11979).text() == BTRFS_206
    assert merge.workload(6592).text() == GENERIC_695


def test_btrfs_206s_file_worked_out_by_hand():
    """Empty; a preallocation past the end and a punch leave it empty; 4 KiB of 'd' at 0; 8 KiB
    of 'e' over it; a truncate up to 12 KiB: the last 4 KiB read as zeros."""
    trees = unnumbered(BTRFS_206).trees
    files = [t.inode("A/foo").data for t in trees[1:]]
    assert files[:3] == [b"", b"", b""]
    assert files[3] == b"d" * 4 * KIB
    assert files[4] == b"e" * 8 * KIB
    assert files[5] == b"e" * 8 * KIB + bytes(4 * KIB)


def test_generic_695s_file_worked_out_by_hand():
    """24 KiB of zeros (a truncate up of an empty file); 16 KiB of 'c' at 4 KiB; a punch of
    4 KiB at 4 KiB and one of 4 KiB at 16 KiB: 'c' left at 8 KiB to 16 KiB alone."""
    data = unnumbered(GENERIC_695).trees[-1].inode("A/foo").data
    assert data == bytes(8 * KIB) + b"c" * 8 * KIB + bytes(8 * KIB)
    sync = unnumbered(GENERIC_695).trees[3].inode("A/foo").data
    assert sync == bytes(4 * KIB) + b"c" * 16 * KIB + bytes(4 * KIB)


def test_a_punch_past_the_end_and_a_preallocation_keep_the_size():
    assert unnumbered("holes.truncate A/foo; holes.punch-end A/foo, sync").trees[-1].inode("A/foo").data == \
        b"A" * 12 * KIB
    assert unnumbered("holes.falloc-k A/foo, sync").trees[-1].inode("A/foo").data == b"A" * 16 * KIB


def stale(text: str, fill: bytes, start: int, end: int) -> dict:
    """The workload's last state with A/foo's range [start, end) holding `fill` again."""
    data = bytearray(unnumbered(text).trees[-1].inode("A/foo").data)
    data[start:end] = fill * (end - start)
    return state(text, changes={"A/foo": Entry(FILE, len(data), digest(bytes(data)), 1)})


def test_generic_695s_punched_range_back_after_the_fsync_is_caught():
    """The bug: the merged hole's item kept the write's generation, the fsync skipped it, and
    after the log's replay 4 KiB to 8 KiB held the write's data again."""
    workload, bad = unnumbered(GENERIC_695), stale(GENERIC_695, b"c", 4 * KIB, 8 * KIB)
    assert judge(workload, "btrfs", 2, bad).verdict != Verdict.CLEAN
    assert judge(workload, "btrfs", 2, state(GENERIC_695)).verdict == Verdict.CLEAN
    assert judge(workload, "btrfs", 1, bad).verdict == Verdict.CLEAN  # the punches were owed nothing yet


def test_a_model_that_does_not_punch_lets_695s_stale_range_through(monkeypatch):
    monkeypatch.setitem(ops.MODELS, "holes", lambda family, variant, data, fill: data if "punch" in variant else
                        data[:4 * KIB].ljust(4 * KIB, b"\0") + bytes([fill]) * 16 * KIB + data[20 * KIB:]
                        if variant == "write-mid" else data[:24 * KIB].ljust(24 * KIB, b"\0"))
    on_profile.cache_clear()  # the workload as judged on btrfs, with the model's trees: of the right model
    try:
        bad = stale(GENERIC_695, b"c", 4 * KIB, 8 * KIB)
        assert judge(unnumbered(GENERIC_695), "btrfs", 2, bad).verdict == Verdict.CLEAN
    finally:
        on_profile.cache_clear()


def test_f2fs_with_compression_refuses_the_punches_alone():
    assert {"holes.punch", "holes.punch-end"} <= refusals("f2fs+compress")
    assert not {"holes", "holes.punch"} & refusals("btrfs")
    refused = on_profile(unnumbered(GENERIC_695), "f2fs+compress")
    assert refused.trees[-1].inode("A/foo").data == bytes(4 * KIB) + b"c" * 16 * KIB + bytes(4 * KIB)


@pytest.mark.parametrize("text", [BTRFS_206, GENERIC_695])
def test_the_program_leaves_the_models_tree(text, tmp_path, host_tools):  # noqa: F811
    program_leaves_its_tree(unnumbered(text), tmp_path)


def test_the_models_own_states_after_the_holes_steps_are_clean():
    assert_own_states_clean(Space(1), range(1431, 1466))
    merge = Space(5, shape=shape_named("hole-merge"))
    assert_own_states_clean(merge, sorted({6592, *random.Random(53).sample(range(merge.total()), 40)}))
