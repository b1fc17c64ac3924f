import random

import pytest

from plugpull.minimise.ddmin import Memo, ddmin, split

CHANGES = tuple(range(200))


class Planted:
    """A fake checker: a candidate fails when it holds every planted culprit."""

    def __init__(self, culprits):
        self.culprits = set(culprits)
        self.checks = 0
        self.seen = set()

    def __call__(self, candidates):
        self.checks += len(candidates)
        self.seen.update(candidates)
        return [self.culprits <= set(c) for c in candidates]


# Checks for k culprits among 200: 2 log2(200) for one; well under one check per write for three.
BOUNDS = {1: 16, 2: 80, 3: 130}


@pytest.mark.parametrize("k", sorted(BOUNDS))
def test_planted_culprits_are_found_within_a_bound(k):
    for seed in range(40):
        culprits = random.Random(seed).sample(CHANGES, k)
        fake = Planted(culprits)
        memo = Memo(fake)
        assert ddmin(CHANGES, memo) == tuple(sorted(culprits))
        assert fake.checks == memo.asked == len(fake.seen)  # no candidate was checked twice
        assert fake.checks <= BOUNDS[k], (culprits, fake.checks)


def test_the_result_is_one_minimal_when_failures_are_not_monotone():
    """Fails when it holds 5 and one of 40 or 41: any single removal from the answer passes."""
    def fails(cands):
        return [5 in c and (40 in c or 41 in c) for c in cands]
    found = ddmin(tuple(range(64)), Memo(fails))
    assert 5 in found and len(found) == 2
    assert not any(fails([tuple(x for x in found if x != drop)])[0] for drop in found)


def test_batches_are_at_most_the_batch_size():
    sizes = []

    def fails(cands):
        sizes.append(len(cands))
        return [{7, 8, 9} <= set(c) for c in cands]
    assert ddmin(CHANGES, fails, batch=3) == (7, 8, 9)
    assert max(sizes) <= 3


def test_a_single_change_is_returned_without_asking():
    def never(cands):
        raise AssertionError("asked")
    assert ddmin((42,), never) == (42,)


def test_the_memo_resumes_from_what_it_knew():
    fake = Planted((3, 150))
    known = {}
    ddmin(CHANGES, Memo(fake, known=known))
    again = Planted((3, 150))
    memo = Memo(again, known=dict(known))
    assert ddmin(CHANGES, memo) == (3, 150)
    assert again.checks == 0


def test_an_oracle_that_answers_short_is_refused():
    with pytest.raises(ValueError):
        ddmin(CHANGES, lambda cands: [])


def test_split_covers_everything_in_order():
    parts = split(tuple(range(10)), 3)
    assert parts == [(0, 1, 2, 3), (4, 5, 6), (7, 8, 9)]


class Trips(Planted):
    """Counts the oracle calls that reach the checker (round trips), behind a memo."""

    def __init__(self, culprits):
        super().__init__(culprits)
        self.trips = 0

    def __call__(self, candidates):
        self.trips += 1
        return super().__call__(candidates)


@pytest.mark.parametrize("k", sorted(BOUNDS))
def test_lookahead_gives_the_same_answer_in_fewer_round_trips(k):
    plain_trips = ahead_trips = 0
    for seed in range(20):
        culprits = random.Random(seed).sample(CHANGES, k)
        plain, ahead = Trips(culprits), Trips(culprits)
        memo = Memo(ahead)
        assert ddmin(CHANGES, Memo(plain)) == ddmin(CHANGES, memo, lookahead=memo.knows) == tuple(sorted(culprits))
        assert ahead.checks == len(ahead.seen)
        plain_trips, ahead_trips = plain_trips + plain.trips, ahead_trips + ahead.trips
    assert ahead_trips < plain_trips


def test_lookahead_keeps_batches_at_most_the_batch_size():
    sizes = []

    def fails(cands):
        sizes.append(len(cands))
        return [{7, 8, 9} <= set(c) for c in cands]
    memo = Memo(fails)
    assert ddmin(CHANGES, memo, batch=5, lookahead=memo.knows) == (7, 8, 9)
    assert max(sizes) <= 5 and 5 in sizes
