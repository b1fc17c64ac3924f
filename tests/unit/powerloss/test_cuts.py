"""Where power is cut, pinned: the cuts each chooser picks from a fixed write log and fixed
seeds, so that the same seeds keep giving the same cuts (and so the same states) wherever the
choosing code lives. No VM."""

from pathlib import Path

import pytest

from plugpull.check.verdict import Ack
from plugpull.crash.record import Record
from plugpull.crash.crashrun import crash_jobs
from plugpull.crash.spec import CrashSpec
from plugpull.powerloss.cuts import cut_points, pair_cuts, point_cuts, spending_order, state_cuts
from plugpull.powerloss.models import parse_model, plan
from plugpull.powerloss.writelog import FLUSH, LogEntry
from plugpull.rng import stable_rng

# 31 entries, six flushes (at 2, 6, 8, 13, 20 and 24) among 25 writes
SHAPE = "WWFWWWFWFWWWWFWWWWWWFWWWFWWWWWW"
ENTRIES = [LogEntry(i, 8 * i, 0 if c == "F" else 8, FLUSH if c == "F" else 0, 0, 0) for i, c in enumerate(SHAPE)]
ACKS = [Ack(1, 0, 4), Ack(2, 0, 9), Ack(3, 0, 17), Ack(4, 0, 25)]
PAIRS = [(i, i // 2) for i in range(0, 30, 2)]
MODELS = [parse_model("prefix"), parse_model("reorder")]


@pytest.mark.parametrize("spec, seed, cuts", [
    ("flushes", 1, [3, 7, 9, 14, 21, 25]),
    ("every:3", 7, [4, 8, 12, 16, 19, 23, 27, 30]),
    ("end", 1, [31]),
    ("random:5", 1, [3, 4, 5, 7, 23]),
    ("random:5", 7, [2, 5, 17, 24, 31]),
    ("flushes, end,every:4,random:3", 1, [3, 5, 7, 9, 11, 14, 16, 18, 20, 21, 25, 26, 30, 31]),
    ("flushes, end,every:4,random:3", 7, [3, 5, 7, 9, 11, 14, 16, 20, 21, 25, 26, 27, 30, 31]),
])
def test_a_cuts_spec_picks_the_same_cuts(spec, seed, cuts):
    assert cut_points(ENTRIES, spec, seed) == cuts


@pytest.mark.parametrize("n, seed, cuts", [
    (8, 1, [0, 5, 8, 16, 21, 25, 27, 31]),
    (8, 2, [0, 8, 9, 15, 16, 18, 23, 31]),
    (12, 3, [5, 7, 8, 10, 12, 18, 21, 22, 24, 26, 30, 31]),
    (40, 1, list(range(32))),
])
def test_seeded_states_are_the_same_cuts(n, seed, cuts):
    assert state_cuts(ENTRIES, n, seed) == cuts


@pytest.mark.parametrize("n, seed, cuts", [
    (5, 1, [(2, 1), (4, 2), (6, 3), (16, 8), (28, 14)]),
    (5, 2, [(4, 2), (14, 7), (16, 8), (20, 10), (28, 14)]),
    (20, 1, PAIRS),
])
def test_seeded_pairs_are_the_same_cuts(n, seed, cuts):
    assert pair_cuts(PAIRS, n, seed) == cuts


@pytest.mark.parametrize("seed, order", [
    (1, [31, 8, 9, 2, 3, 24, 25, 4, 16, 17, 20, 21, 13, 14, 6, 7, 11, 15, 1, 12, 29, 22, 5, 19, 18, 10, 28, 27, 26,
         0, 30, 23]),
    (2, [31, 2, 3, 6, 7, 13, 14, 16, 17, 8, 9, 20, 21, 24, 25, 4, 0, 10, 19, 15, 28, 11, 1, 29, 27, 18, 23, 26, 5,
         22, 12, 30]),
])
def test_a_budget_spends_the_cuts_in_the_same_order(seed, order):
    assert spending_order(range(len(ENTRIES) + 1), ENTRIES, ACKS, seed) == order


def test_a_budget_spends_the_pairs_in_the_same_order():
    assert spending_order(PAIRS, ENTRIES, ACKS, 3, first=lambda cut: cut[0]) == [
        (28, 14), (24, 12), (16, 8), (6, 3), (20, 10), (8, 4), (2, 1), (4, 2), (14, 7), (0, 0), (10, 5), (22, 11),
        (12, 6), (26, 13), (18, 9)]


def test_a_hunt_cuts_at_the_same_points():
    assert point_cuts(ENTRIES, ACKS) == [4, 6, 8, 9, 13, 17, 20, 24, 25, 31]


def jobs(spec: CrashSpec, meta: dict | None = None) -> list[tuple]:
    rec = Record(Path("/nonexistent"), meta or {}, ACKS)
    return [tuple(job) for job in crash_jobs(rec, ENTRIES, spec, MODELS)]


def by_model(*cuts) -> list[tuple]:
    return [(str(model), cut, others) for model in MODELS for cut, others in cuts]


@pytest.mark.parametrize("spec, cuts", [
    (CrashSpec(states=6, seed=3), [(c, ()) for c in (5, 8, 10, 12, 22, 31)]),
    (CrashSpec(cuts="random:4,flushes", seed=2), [(c, ()) for c in (1, 3, 6, 7, 9, 14, 21, 25)]),
    (CrashSpec(budget=5, seed=1), [(c, ()) for c in (2, 3, 8, 9, 31)]),
])
def test_a_crash_run_checks_the_same_states(spec, cuts):
    assert jobs(spec) == by_model(*cuts)


def test_a_budget_spends_its_distinct_states_on_the_same_cuts():
    assert jobs(CrashSpec(budget=9, seed=4)) == [
        ("prefix", c, ()) for c in (2, 8, 9, 13, 14, 20, 21, 31)] + [("reorder", c, ()) for c in (8, 9, 13, 14, 20, 21, 31)]


def test_two_disks_are_cut_at_the_same_pairs():
    assert jobs(CrashSpec(states=4, seed=5), {"disks": 2, "cuts": PAIRS}) == by_model(
        (0, (0,)), (10, (5,)), (14, (7,)), (28, (14,)))


def test_the_seeded_randomness_is_the_same():
    assert stable_rng(5, "x").getrandbits(64) == 3539326302477711000
    assert stable_rng(1, "lose-disk", 3).randrange(3) == 2
    assert [p.entry_index for p in plan(ENTRIES, 31, "reorder", 3)] == [
        0, 1, 3, 4, 5, 7, 9, 10, 11, 12, 14, 15, 16, 17, 18, 19, 21, 22, 23, 25, 26, 27, 28, 29]
    assert [tuple(p.__dict__.values()) for p in plan(ENTRIES, 20, "torn", 2)][-5:] == [
        (15, 120, 3), (15, 124, 2), (15, 127, 1), (18, 145, 1), (18, 148, 4)]
