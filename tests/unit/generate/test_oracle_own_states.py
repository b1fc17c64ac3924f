"""The model's own states judged clean (no false alarm): every tree a generated workload's points
can leave, on every profile as its filesystem runs it, over samples of each seq and setup and of
the later tables' blocks (`table_block`, which the tables' own tests draw from too), and under
the `slow` mark all of seq 1 and thousands of seq 2. No VM."""

import random

import pytest

from plugpull.check.verdict import Verdict
from plugpull.generate.judge import judge
from plugpull.generate.oracle import PROFILES, end_step, on_profile
from plugpull.generate.space import FIRST, GROWN, Space


def assert_own_states_clean(space: Space, indexes) -> None:
    """Every tree from point j on, judged with acks 0..j, on every profile (as its filesystem
    runs the workload: what it refuses not done): no false alarm."""
    for index in indexes:
        workload = space.workload(index)
        for fs in PROFILES:
            run = on_profile(workload, fs)
            for j in [None, *range(len(workload.points()) + 1)]:
                for tree in run.trees[0 if j is None else end_step(workload, j):]:
                    found = judge(workload, fs, j, tree.view())
                    assert found.verdict == Verdict.CLEAN, (workload.ident, workload.text(), fs, j, found.reason)


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
@pytest.mark.parametrize("seq, k", [(1, 120), (2, 50), (3, 15)])
def test_the_models_own_states_are_clean(seq, k, synced):
    space = Space(seq, synced=synced)
    assert_own_states_clean(space, space.sample(k, seed=11))


def later_block(seq: int, k: int, seed: int) -> list[int]:
    """`k` ids drawn from the workloads with a later operation or msync (numbered after the first table's)."""
    space = Space(seq)
    return sorted(random.Random(seed).sample(range(space.count(mask=FIRST), space.count(mask=GROWN[1])), k))


def table_block(seq: int, table: int, k: int | None, seed: int) -> list[int]:
    """`k` ids (None: all) of the workloads of table `table` (1-based, from 2): those with one of
    its operations or points, numbered after the tables before it."""
    space = Space(seq)
    block = range(space.count(mask=GROWN[table - 2]), space.count(mask=GROWN[table - 1]))
    return list(block) if k is None else sorted(random.Random(seed).sample(block, k))


def rmdir_block(seq: int, k: int | None, seed: int) -> list[int]:
    """`k` ids (None: all) of the workloads with an rmdir (the third table's)."""
    return table_block(seq, 3, k, seed)


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
@pytest.mark.parametrize("seq, k", [(2, 40), (3, 15)])
def test_the_models_own_states_after_rmdir_are_clean(seq, k, synced):
    assert_own_states_clean(Space(seq, synced=synced), rmdir_block(seq, k, seed=12))


def range_block(seq: int, k: int | None, seed: int) -> list[int]:
    """`k` ids (None: all) of the workloads with a fallocate at the end of a file, a collapse or
    an insert range (the fourth table's)."""
    return table_block(seq, 4, k, seed)


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
@pytest.mark.parametrize("seq, k", [(1, None), (2, 40), (3, 15)])
def test_the_models_own_states_after_the_fourth_tables_operations_are_clean(seq, k, synced):
    """btrfs's among them, where collapse and insert are refused and not done."""
    assert_own_states_clean(Space(seq, synced=synced), range_block(seq, k, seed=13))


@pytest.mark.slow
@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
@pytest.mark.parametrize("part", ["seq1-all", "seq2-later", "seq2-any", "seq2-rmdir", "seq3-rmdir", "seq2-range",
                                  "seq3-range"])
def test_the_models_own_states_are_clean_over_all_of_seq1_and_thousands_of_seq2(part, synced):
    space = Space({"seq1-all": 1, "seq3-rmdir": 3, "seq3-range": 3}.get(part, 2), synced=synced)
    indexes = {"seq1-all": lambda: range(space.count()), "seq2-later": lambda: later_block(2, 1500, seed=5),
               "seq2-any": lambda: space.sample(1000, seed=6), "seq2-rmdir": lambda: rmdir_block(2, None, seed=0),
               "seq3-rmdir": lambda: rmdir_block(3, 300, seed=7), "seq2-range": lambda: range_block(2, 1500, seed=8),
               "seq3-range": lambda: range_block(3, 300, seed=9)}[part]()
    assert_own_states_clean(space, indexes)
