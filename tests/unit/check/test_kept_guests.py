"""Hot checker guests kept between checks (`KeptGuests`, a cluster worker's across its tasks),
on the fake backend: the second check takes the first one's guest, a guest that died or
could not be trusted is not handed on, the verdicts are those of a guest per check, and
closing (the worker's teardown) ends the kept guest and any given back after. No VM."""

import pytest
from tests.unit.guest import test_backend
from tests.fake_backend import FakeBackend, Plan
from tests.unit.guest.test_backend import IMAGE, ROUNDS, WL, XFS, outcome_of
from tests.unit.check.test_hot_checker import EXPECTED, PER_STATE, verdicts

from plugpull.check.checker import Checker, Plug
from plugpull.check.hotguest import KeptGuests
from plugpull.cluster.worker import PlugpullPlugin, checker_settings
from plugpull.crash.judge import judge
from plugpull.guest.contract.config import Accel
from plugpull.guest.rig import Rig


@pytest.fixture
def rec(tmp_path):
    return test_backend.rec.__wrapped__(tmp_path)


def judged(rec, backend, where, kept, **settings):
    checker = Checker(Rig(IMAGE, Accel.TCG, backend), XFS, plug=Plug.HOT, per_command=1, kept=kept, **settings)
    return verdicts(judge(rec, ROUNDS, checker, WL, seed=1, state_dir=where))


def test_the_next_check_takes_the_kept_guest_and_judges_as_a_fresh_one(rec, tmp_path):
    backend, kept = FakeBackend([], outcome_of), KeptGuests()
    assert judged(rec, backend, tmp_path / "a", kept) == EXPECTED
    assert judged(rec, backend, tmp_path / "b", kept) == EXPECTED
    [guest] = backend.guests  # one guest for both
    assert guest.alive()
    kept.close()
    assert not guest.alive()
    assert judged(rec, backend, tmp_path / "c", kept) == EXPECTED  # after close: a guest of its own, closed after
    assert len(backend.guests) == 2 and not any(g.alive() for g in backend.guests)


def test_a_kept_guest_that_died_is_replaced(rec, tmp_path):
    backend, kept = FakeBackend([], outcome_of), KeptGuests()
    judged(rec, backend, tmp_path / "a", kept)
    backend.guests[0].power_cut()
    assert judged(rec, backend, tmp_path / "b", kept) == EXPECTED
    first, fresh = backend.guests
    assert not first.alive() and fresh.alive()
    kept.close()
    assert not fresh.alive()


def test_a_guest_that_failed_mid_check_is_not_kept_its_replacement_is(rec, tmp_path):
    backend, kept = FakeBackend([Plan(dies_after=PER_STATE + 1)], outcome_of), KeptGuests()
    assert judged(rec, backend, tmp_path / "a", kept) == EXPECTED
    first, fresh = backend.guests
    assert not first.alive() and fresh.alive()
    guest = kept.take(set())
    assert guest.machine is fresh and kept.take(set()) is None
    guest.close()


def test_the_worker_plugin_closes_its_kept_guest_at_teardown_and_ships_no_guests(rec, tmp_path):
    backend = FakeBackend([], outcome_of)
    plugin = PlugpullPlugin(tmp_path / "w", Rig(IMAGE, Accel.TCG, backend))
    judged(rec, backend, tmp_path / "a", plugin.guests)
    assert backend.guests[0].alive()
    plugin.teardown(worker=None)
    assert not backend.guests[0].alive()
    checker = Checker(Rig(IMAGE, Accel.TCG, backend), XFS, kept=plugin.guests)
    assert "kept" not in checker_settings(checker)
