import subprocess
import sys
from pathlib import Path

import pytest

from plugpull.powerloss.cuts import cut_points
from plugpull.powerloss.models import ModelSpec, Piece, parse_model, plan
from plugpull.powerloss.writelog import FLUSH, LogEntry, LogWriter, iter_entries

REPO = Path(__file__).resolve().parents[3]


def build(tmp_path, ops, name="log"):
    """Hand-build a log from ops: ("w", sector, n), ("fua", sector, n), ("d", sector, n), ("f",)."""
    path = tmp_path / name
    with LogWriter(path) as log:
        for i, (kind, *args) in enumerate(ops):
            if kind == "f":
                log.flush()
            elif kind == "d":
                log.discard(*args)
            else:
                sector, n = args
                log.write(sector, bytes([i + 1]) * (512 * n), fua=kind == "fua")
    return list(iter_entries(path))


def kept(entries, model, cut=None, seed=0):
    cut = len(entries) if cut is None else cut
    return {p.entry_index for p in plan(entries, cut, model, seed)}


# w1 w2 FLUSH w3 w4: entry indices 0 1 [2] 3 4
SIMPLE = [("w", 0, 8), ("w", 8, 8), ("f",), ("w", 16, 8), ("w", 24, 8)]


def test_prefix_keeps_everything_issued(tmp_path):
    entries = build(tmp_path, SIMPLE)
    assert plan(entries, 5, "prefix", 0) == [Piece(i, 8 * n, 8) for n, i in enumerate([0, 1, 3, 4])]
    assert kept(entries, "prefix", cut=4) == {0, 1, 3}
    assert kept(entries, "prefix", cut=0) == set()


def test_drop_unflushed(tmp_path):
    entries = build(tmp_path, SIMPLE)
    assert kept(entries, "drop-unflushed") == {0, 1}
    assert kept(entries, "drop-unflushed", cut=2) == set()
    assert kept(entries, "drop-unflushed", cut=3) == {0, 1}


def test_lying_flush_protects_nothing(tmp_path):
    entries = build(tmp_path, SIMPLE)
    assert kept(entries, "drop-unflushed+lying") == set()


def test_fua_write_is_durable_unless_the_disk_lies(tmp_path):
    entries = build(tmp_path, [("w", 0, 8), ("f",), ("fua", 8, 8), ("w", 16, 8)])
    assert kept(entries, "drop-unflushed") == {0, 2}
    assert kept(entries, "drop-unflushed+lying") == set()
    for seed in range(20):
        assert {0, 2} <= kept(entries, "reorder", seed=seed)


def test_preflush_write_flushes_what_came_before_but_not_itself():
    """dm-log-writes logs a PREFLUSH write as one entry with FLUSH set and data."""
    entries = [LogEntry(0, 0, 8, 0, 1024, 4096), LogEntry(1, 8, 8, FLUSH, 5632, 4096)]
    assert kept(entries, "drop-unflushed") == {0}
    assert kept(entries, "prefix") == {0, 1}


FLUSH_MODELS = ("drop-unflushed", "reorder", "torn", "cache:1:random")


def test_log_order_decides_what_a_flush_covers(tmp_path):
    """The rule: a write the log places before a FLUSH entry is covered by that flush.

    The log is in completion order. A write issued before a flush but completed while it
    ran would sit before the FLUSH entry too, and be taken as durable although the device
    never promised it; the log cannot tell the two apart. docs/flush-order.md bounds this by
    measurement (bench/flush_fidelity.py): on the recorded ATA disks no write was ever in
    flight across a flush, because the guest drains its queue before a FLUSH CACHE.
    """
    entries = build(tmp_path, [("w", 0, 8), ("f",), ("w", 8, 8)])
    for model in FLUSH_MODELS:
        survivors = [kept(entries, model, seed=seed) for seed in range(16)]
        assert all(0 in s for s in survivors), model
        assert any(2 not in s for s in survivors), model
    assert kept(entries, "drop-unflushed") == {0}
    assert kept(entries, "drop-unflushed+lying") == set()


def test_reorder_keeps_flushed_and_any_subset_of_the_cut_epoch(tmp_path):
    entries = build(tmp_path, SIMPLE)
    seen = set()
    for seed in range(64):
        got = kept(entries, "reorder", seed=seed)
        assert {0, 1} <= got <= {0, 1, 3, 4}
        seen.add(frozenset(got - {0, 1}))
    assert seen == {frozenset(), frozenset({3}), frozenset({4}), frozenset({3, 4})}


def test_reorder_lying_can_lose_flushed_writes(tmp_path):
    entries = build(tmp_path, SIMPLE)
    results = [kept(entries, "reorder+lying", seed=s) for s in range(64)]
    assert any(0 not in r for r in results)
    assert all(r <= {0, 1, 3, 4} for r in results)


def test_reorder_applies_survivors_in_log_order(tmp_path):
    entries = build(tmp_path, [("w", 0, 8)] * 6)
    for seed in range(10):
        indices = [p.entry_index for p in plan(entries, 6, "reorder", seed)]
        assert indices == sorted(indices)


MIB = 2048  # sectors
HALF = MIB // 2


def test_cache_fifo_destages_oldest_first(tmp_path):
    entries = build(tmp_path, [("w", 0, HALF), ("w", 10000, HALF), ("w", 5000, HALF)])
    assert plan(entries, 2, "cache:1", 0) == []
    assert plan(entries, 3, "cache:1:fifo", 0) == [Piece(0, 0, HALF)]


def test_cache_elevator_sweeps_upward_then_wraps(tmp_path):
    ops = [("w", 20000, HALF), ("w", 4000, HALF), ("w", 8000, HALF),
           ("w", 2000, HALF), ("w", 1000, HALF), ("w", 15000, HALF)]
    entries = build(tmp_path, ops)
    firsts = [p.first_sector for p in plan(entries, 6, "cache:1:elevator", 0)]
    assert firsts == [4000, 8000, 20000, 1000]


def test_cache_flush_drains_unless_lying(tmp_path):
    entries = build(tmp_path, SIMPLE)
    assert kept(entries, "cache") == {0, 1}
    assert kept(entries, "cache+lying") == set()


def test_cache_fua_goes_straight_to_disk_and_supersedes_cached_data(tmp_path):
    entries = build(tmp_path, [("w", 0, 8), ("fua", 0, 8), ("w", 64, 8), ("f",)])
    assert plan(entries, 2, "cache", 0) == [Piece(1, 0, 8)]
    assert plan(entries, 4, "cache", 0) == [Piece(1, 0, 8), Piece(2, 64, 8)]
    assert plan(entries, 4, "cache+lying", 0) == []


def test_cache_keeps_only_newest_data_per_sector(tmp_path):
    """w1 overwrites half of w0 in the cache, so only w0's other half is ever destaged."""
    entries = build(tmp_path, [("w", 0, HALF), ("w", HALF // 2, HALF), ("w", 5000, HALF)])
    assert plan(entries, 3, "cache:1", 0) == [Piece(0, 0, HALF // 2)]


def test_cache_of_zero_is_write_through(tmp_path):
    ops = [("w", 0, 8), ("w", 4, 8), ("d", 0, 4), ("w", 100, 1)]
    entries = build(tmp_path, ops)
    assert plan(entries, 4, "cache:0", 0) == plan(entries, 4, "prefix", 0)


def test_cache_random_is_seeded(tmp_path):
    entries = build(tmp_path, [("w", i * HALF, HALF) for i in range(8)])
    plans = {tuple(plan(entries, 8, "cache:1:random", s)) for s in range(10)}
    assert len(plans) > 1
    assert plan(entries, 8, "cache:1:random", 3) == plan(entries, 8, "cache:1:random", 3)
    for p in plans:
        assert sum(piece.nr_sectors for piece in p) == 6 * HALF


def test_torn_keeps_partial_writes(tmp_path):
    entries = build(tmp_path, [("w", 0, 8), ("f",), ("w", 100, 64)])
    partial = 0
    for seed in range(40):
        pieces = plan(entries, 3, "torn", seed)
        assert pieces[0] == Piece(0, 0, 8)
        tail = pieces[1:]
        sectors = [s for p in tail for s in range(p.first_sector, p.first_sector + p.nr_sectors)]
        assert all(p.entry_index == 2 for p in tail)
        assert len(sectors) == len(set(sectors)) and set(sectors) <= set(range(100, 164))
        partial += 0 < len(sectors) < 64
    assert partial > 0


def test_torn_single_sector_write_is_whole_or_nothing(tmp_path):
    entries = build(tmp_path, [("w", 7, 1)])
    for seed in range(20):
        assert plan(entries, 1, "torn", seed) in ([], [Piece(0, 7, 1)])


def test_discard_is_a_piece(tmp_path):
    entries = build(tmp_path, [("w", 0, 8), ("d", 0, 8), ("f",)])
    assert plan(entries, 3, "drop-unflushed", 0) == [Piece(0, 0, 8), Piece(1, 0, 8)]


def test_same_inputs_same_plan_other_seed_other_plan(tmp_path):
    entries = build(tmp_path, [("w", i * 8, 8) for i in range(12)])
    for model in ("reorder", "torn", "cache:0:random"):
        assert plan(entries, 12, model, 42) == plan(entries, 12, model, 42)
    assert any(plan(entries, 12, "reorder", 42) != plan(entries, 12, "reorder", s) for s in range(1, 5))


def test_plan_ignores_python_hash_salt(tmp_path):
    build(tmp_path, [("w", i * 8, 8) for i in range(16)])
    code = ("import sys; from plugpull.powerloss.writelog import iter_entries; from plugpull.powerloss.models import plan;"
            "print(plan(list(iter_entries(sys.argv[1])), 16, 'torn', 9))")
    outputs = {
        subprocess.run([sys.executable, "-c", code, str(tmp_path / "log")], cwd=REPO, check=True,
                       capture_output=True, text=True, env={"PYTHONHASHSEED": salt}).stdout
        for salt in ("1", "2")
    }
    assert len(outputs) == 1 and "Piece" in outputs.pop()


def test_plan_rejects_bad_cut(tmp_path):
    entries = build(tmp_path, SIMPLE)
    with pytest.raises(ValueError):
        plan(entries, 6, "prefix", 0)
    with pytest.raises(ValueError):
        plan(entries, -1, "prefix", 0)


@pytest.mark.parametrize("text", ["prefix", "drop-unflushed", "reorder+lying", "torn",
                                  "cache:8:fifo", "cache:16:elevator+lying", "cache:0:random"])
def test_model_round_trip(text):
    spec = parse_model(text)
    assert str(spec) == text
    assert parse_model(str(spec)) == spec


def test_model_defaults():
    assert parse_model("cache") == ModelSpec("cache", cache_mib=8, destage="fifo")
    assert parse_model("cache:16+lying") == ModelSpec("cache", lying=True, cache_mib=16)
    assert str(parse_model("cache")) == "cache:8:fifo"


@pytest.mark.parametrize("text", ["", "nope", "prefix:3", "reorder+liar", "torn+lying+lying",
                                  "cache:x", "cache:-1", "cache:1:sideways", "cache:1:fifo:2"])
def test_bad_models_raise(text):
    with pytest.raises(ValueError):
        parse_model(text)


def test_bad_spec_fields_raise():
    with pytest.raises(ValueError, match="unknown power-loss model"):
        ModelSpec("gentle")
    with pytest.raises(ValueError):
        ModelSpec("reorder", cache_mib=4)


def test_cut_points(tmp_path):
    entries = build(tmp_path, [("w", 0, 1), ("w", 1, 1), ("f",), ("w", 2, 1), ("d", 0, 1), ("w", 3, 1), ("f",)])
    assert cut_points(entries, "flushes", 0) == [3, 7]
    assert cut_points(entries, "every:2", 0) == [2, 6]
    assert cut_points(entries, "end", 0) == [7]
    assert cut_points(entries, "flushes, end,every:2", 0) == [2, 3, 6, 7]
    random_cuts = cut_points(entries, "random:3", 5)
    assert len(random_cuts) == 3 and set(random_cuts) <= set(range(1, 8))
    assert random_cuts == cut_points(entries, "random:3", 5)
    assert any(cut_points(entries, "random:3", s) != random_cuts for s in range(6, 12))
    assert cut_points(entries, "random:100", 0) == list(range(1, 8))


@pytest.mark.parametrize("spec", ["", "sometimes", "every", "every:0", "every:x", "random:", "end:3", "flushes,"])
def test_bad_cut_specs_raise(tmp_path, spec):
    entries = build(tmp_path, SIMPLE)
    with pytest.raises(ValueError):
        cut_points(entries, spec, 0)
