import pytest

from plugpull.powerloss.legal import durability, legality, volatile
from plugpull.powerloss.models import MODEL_NAMES, Piece, plan
from plugpull.powerloss.writelog import DISCARD, FLUSH, FUA, LogEntry


def log(*ops):
    """Hand-built entries: ("w", sector, n), ("fua", sector, n), ("d", sector, n), ("f",),
    ("pf", sector, n) a write carrying a PREFLUSH."""
    flags = {"w": 0, "fua": FUA, "d": DISCARD, "f": FLUSH, "pf": FLUSH}
    entries = []
    for i, (kind, *where) in enumerate(ops):
        sector, n = where or (0, 0)
        entries.append(LogEntry(i, sector, n, flags[kind], 0, 512 * n if kind in ("w", "fua", "pf") else 0))
    return entries


def whole(entries, *indexes):
    return [Piece(i, entries[i].sector, entries[i].nr_sectors) for i in indexes]


# w0 w1 FLUSH(2) w3 fua4 w5
LOG = log(("w", 0, 8), ("w", 8, 8), ("f",), ("w", 16, 8), ("fua", 24, 8), ("w", 16, 8))


def test_durability_names_the_covering_flush_and_fua():
    assert durability(LOG, 6) == {0: "flush 2", 1: "flush 2", 3: "", 4: "FUA", 5: ""}
    assert volatile(LOG, 6) == [3, 5]
    assert volatile(LOG, 2) == [0, 1]  # the flush had not completed
    assert volatile(LOG, 6, lying=True) == [0, 1, 3, 4, 5]


def test_a_preflush_write_is_after_its_flush():
    entries = log(("w", 0, 8), ("pf", 8, 8))
    assert durability(entries, 2) == {0: "flush 1", 1: ""}


def test_any_subset_of_the_volatile_writes_is_legal():
    for kept in ([], [3], [5], [3, 5], [5, 3]):
        state = whole(LOG, 0, 1, 4, *kept)
        assert legality(LOG, 6, state).legal, kept


def test_losing_a_flushed_write_is_illegal():
    verdict = legality(LOG, 6, whole(LOG, 1, 3, 4))
    assert not verdict.legal
    assert "sector 0 " in verdict.reason and "entry 0" in verdict.reason and "flush 2" in verdict.reason


def test_losing_a_completed_fua_write_is_illegal():
    verdict = legality(LOG, 6, whole(LOG, 0, 1))
    assert not verdict.legal and "FUA" in verdict.reason


def test_older_data_over_a_durable_write_is_illegal():
    entries = log(("w", 0, 8), ("fua", 0, 8))
    assert legality(entries, 2, whole(entries, 1)).legal
    assert legality(entries, 2, whole(entries, 1, 0)).legal is False


def test_a_write_issued_after_the_cut_cannot_persist():
    assert not legality(LOG, 3, whole(LOG, 0, 1, 3)).legal


def test_a_sector_of_a_volatile_write_may_persist_alone():
    assert legality(LOG, 6, whole(LOG, 0, 1, 4) + [Piece(3, 17, 2)]).legal


LOGS = {
    "epochs": LOG,
    "overwrites": log(("w", 0, 16), ("w", 8, 16), ("f",), ("w", 0, 8), ("w", 4, 16), ("fua", 8, 4),
                      ("w", 0, 32), ("d", 8, 8), ("w", 12, 8)),
    "preflush": log(("w", 0, 8), ("pf", 8, 8), ("w", 0, 8), ("pf", 16, 8), ("w", 8, 4), ("fua", 0, 2),
                    ("w", 1, 2)),
    "no-flush": log(*[("w", (i * 5) % 40, 8) for i in range(12)]),
    "discards": log(("w", 0, 64), ("f",), ("d", 0, 32), ("w", 16, 8), ("f",), ("d", 8, 8), ("w", 0, 4)),
}
MODELS = [m for m in MODEL_NAMES if m != "cache"] + ["cache:0", "cache:0:random", "cache:0:elevator"]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", sorted(LOGS))
def test_every_model_leaves_only_legal_states(name, model):
    """Each model at every cut of each hand-built log, many seeds (cache:0 destages at once,
    so that the cache's policy and its flush drains are exercised on these small logs)."""
    entries = LOGS[name]
    for cut in range(len(entries) + 1):
        for seed in range(25):
            verdict = legality(entries, cut, plan(entries, cut, model, seed))
            assert verdict.legal, (cut, seed, verdict.reason)


@pytest.mark.parametrize("model", ["drop-unflushed+lying", "reorder+lying", "cache:1:random+lying"])
def test_a_lying_disk_leaves_illegal_states(model):
    entries = LOGS["overwrites"]
    verdicts = [legality(entries, len(entries), plan(entries, len(entries), model, seed)).legal
                for seed in range(25)]
    assert not all(verdicts)
