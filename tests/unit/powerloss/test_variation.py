import random

import pytest

from plugpull.powerloss.crashstate import image_sha256, materialize
from plugpull.powerloss.models import plan
from plugpull.powerloss.variation import REFERENCES, plan_key, variation
from plugpull.powerloss.writelog import LogWriter, iter_entries


@pytest.fixture
def recorded(tmp_path):
    """A 64 KiB base and a log of overlapping writes, a discard, flushes and a FUA write."""
    base = tmp_path / "base.img"
    base.write_bytes(bytes(range(256)) * 256)
    rng = random.Random(1)
    with LogWriter(tmp_path / "write.log") as log:
        for i in range(60):
            if i % 17 == 16:
                log.flush()
            elif i % 23 == 22:
                log.discard(rng.randrange(100), 4)
            else:
                log.write(rng.randrange(120), bytes([i + 1]) * 512 * rng.randrange(1, 8), fua=i % 29 == 28)
    return base, tmp_path / "write.log", list(iter_entries(tmp_path / "write.log"))


def image(tmp_path, recorded, pieces, name):
    base, log, _ = recorded
    materialize(base, log, pieces, tmp_path / name, digest=False)
    return image_sha256(tmp_path / name)


@pytest.mark.parametrize("model", ["reorder", "torn", "cache:0:random", "cache:1:random", "cache:0:elevator",
                                   "reorder+lying"])
def test_the_failing_state_and_both_references_are_rebuilt(tmp_path, recorded, model):
    entries = recorded[2]
    for seed in range(4):
        cut = len(entries) - seed * 5
        var = variation(entries, cut, model, seed)
        failing = image(tmp_path, recorded, plan(entries, cut, model, seed), "b")
        for reference in REFERENCES:
            assert image(tmp_path, recorded, var.pieces(reference, var.changes(reference)), "a") == failing
        none = "drop-unflushed+lying" if "lying" in model else "drop-unflushed"
        assert image(tmp_path, recorded, var.pieces("drop-unflushed", ()), "a") == \
            image(tmp_path, recorded, plan(entries, cut, none, seed), "b")
        assert image(tmp_path, recorded, var.pieces("prefix", ()), "a") == \
            image(tmp_path, recorded, plan(entries, cut, "prefix", seed), "b")


def test_volatile_and_durable_split_the_updates(recorded):
    entries = recorded[2]
    var = variation(entries, len(entries), "reorder", 3)
    updates = [e.index for e in entries if e.nr_sectors]
    assert sorted(var.durable + var.volatile) == updates
    kept = var.changes("drop-unflushed")
    assert set(kept) <= set(var.volatile) and kept != var.volatile
    assert set(var.changes("prefix")) == set(var.volatile) - set(kept)  # reorder keeps whole writes
    assert all(e > 50 for e in var.volatile if not entries[e].is_fua)  # after the last flush (entry 50)


def test_only_volatile_writes_can_be_chosen(recorded):
    entries = recorded[2]
    var = variation(entries, len(entries), "reorder", 3)
    with pytest.raises(ValueError):
        var.pieces("prefix", (var.durable[0],))


def test_plans_have_distinct_keys(recorded):
    entries = recorded[2]
    var = variation(entries, len(entries), "reorder", 3)
    kept = var.changes("drop-unflushed")
    keys = {plan_key(var.pieces("drop-unflushed", kept[:n])) for n in range(len(kept) + 1)}
    assert len(keys) == len(kept) + 1
