"""The checker's batches spread over hosts, with fake hosts: every state is judged once, at its
index, whatever the number of hosts; a host that drops out gives its states to the others."""

import threading

import pytest

from plugpull.check.checker import Checker
from plugpull.check.cold import ColdPath
from plugpull.check.spread import batches_for
from plugpull.check.verdict import Observation
from plugpull.guest.contract.config import Accel
from plugpull.guest.rig import Rig


class FakeHost:
    """Judges a state by its index (mount_rc = index); after `fails_after` batches it fails
    every state as the rig (an infra-error) and, if `dies`, stops answering."""

    def __init__(self, uri: str, fails_after: int | None = None, dies: bool = True, meet=None):
        self.uri, self.fails_after, self.dies, self.meet = uri, fails_after, dies, meet
        self.batches, self.judged = 0, []
        self._lock = threading.Lock()

    def failing(self) -> bool:
        return self.fails_after is not None and self.batches > self.fails_after

    def reachable(self) -> bool:
        return not (self.dies and self.failing())

    def check(self, chunk) -> list[Observation]:
        if self.meet and self.batches == 0:
            self.meet.wait(timeout=10)  # each host holds its first batch until the other has one
        with self._lock:
            self.batches += 1
            if self.failing():
                return [Observation(-1, -1, infra_error=f"{self.uri} broke") for _ in chunk]
            self.judged += [index for index, _, _ in chunk]
        return [Observation(index, 0) for index, _, _ in chunk]


@pytest.fixture(autouse=True)
def fake_checks(monkeypatch):
    monkeypatch.setattr(ColdPath, "check_chunk", lambda self, chunk, progress: self.rig.backend.check(chunk))


def check(hosts, states=12, batch=2, workers=1):
    checker = Checker(Rig(None, Accel.TCG, hosts=tuple(hosts)), None, batch=batch, workers=workers)
    observations = checker.check([f"state{i}" for i in range(states)], collect=["tar"] * states)
    return checker, [(o.mount_rc, o.infra_error) for o in observations]


def pair(**b):
    meet = threading.Barrier(2)
    return FakeHost("a", meet=meet), FakeHost("b", meet=meet, **b)


def every_state(n=12):
    return [(i, "") for i in range(n)]


def test_two_hosts_judge_every_state_once_in_order():
    a, b = pair()
    checker, results = check([a, b])
    assert results == every_state() == check([FakeHost("only")])[1]
    assert sorted(a.judged + b.judged) == list(range(12))
    assert a.judged and b.judged, "work did not reach both hosts"
    assert checker.reached == {"a": len(a.judged), "b": len(b.judged)}


def test_a_host_that_drops_out_gives_its_states_to_the_others():
    a, b = pair(fails_after=1)
    _, results = check([a, b])
    assert results == every_state()
    assert b.batches == 2 and len(b.judged) == 2
    assert sorted(a.judged + b.judged) == list(range(12))


def test_a_state_that_fails_on_a_live_host_is_tried_elsewhere_then_stays_an_infra_error():
    flaky, dead_everywhere = FakeHost("a", fails_after=0, dies=False), FakeHost("b", fails_after=0, dies=False)
    _, results = check([flaky, dead_everywhere], states=3, batch=3)
    assert all(infra.endswith("broke") for _, infra in results)
    assert flaky.batches + dead_everywhere.batches == 2 * 3, "each of 2 batches tried once per host, plus once"


def test_when_every_host_drops_out_the_states_left_are_infra_errors():
    _, results = check([FakeHost("a", fails_after=0), FakeHost("b", fails_after=1)])
    judged = [index for index, infra in results if not infra]
    assert 0 < len(judged) < 12
    assert all("broke" in infra for _, infra in results if infra)


def test_batches_are_small_enough_for_every_worker():
    assert [len(b) for b in batches_for(list(range(10)), 16, 4)] == [3, 3, 3, 1]
    assert [len(b) for b in batches_for(list(range(10)), 2, 2)] == [2] * 5
    assert batches_for([], 16, 2) == []
