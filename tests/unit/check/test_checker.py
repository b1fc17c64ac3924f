"""The checker's settings choose one way of checking, once, at its first check. No VM."""

from plugpull.check import hostfsck
from plugpull.check.checker import Checker, Plug
from plugpull.check.cold import ColdPath
from plugpull.check.hot import HotPath
from plugpull.check.spread import SpreadPath
from plugpull.guest.contract.config import Accel
from plugpull.guest.rig import Rig
from plugpull.testbed.fs import filesystem

XFS = filesystem("xfs")


def made(**settings) -> Checker:
    return Checker(Rig(None, Accel.TCG), XFS, **settings)


def test_batch_plugging_checks_cold_and_hot_plugging_checks_hot():
    cold = made(plug=Plug.BATCH, batch=4).path
    assert isinstance(cold, ColdPath) and cold.batch == 4
    assert isinstance(made(plug="hot").path, HotPath)


def test_several_states_per_command_only_when_per_command_asks_for_more_than_one():
    assert made(plug=Plug.HOT, per_command=8).path.many.per_command == 8
    assert made(plug=Plug.HOT, per_command=1).path.many is None


def test_the_host_fsck_is_chosen_only_where_the_host_has_the_fsck(monkeypatch):
    monkeypatch.setattr(hostfsck, "available", lambda mount_type: False)
    assert made(plug=Plug.HOT).path.many.host_fsck is False
    monkeypatch.setattr(hostfsck, "available", lambda mount_type: True)
    assert made(plug=Plug.HOT).path.many.host_fsck is True
    assert made(plug=Plug.HOT, host_fsck=False).path.many.host_fsck is False


def test_hosts_spread_cold_batches_one_cold_path_per_host():
    checker = Checker(Rig(None, Accel.TCG, hosts=("a", "b")), XFS, plug=Plug.HOT, batch=3, workers=2)
    path = checker.path
    assert isinstance(path, SpreadPath) and path.per_host == 2
    assert [type(c) for c in path.colds] == [ColdPath, ColdPath] and {c.batch for c in path.colds} == {3}


def test_the_way_is_made_once_and_timing_set_after_reaches_it():
    checker = made(plug=Plug.HOT)
    path = checker.path
    checker.timing = "timing"
    assert checker.path is path and path.many.asks.timing == "timing"
    with checker.fsck_only(lambda index, obs: True) as same:
        assert same is checker and path.many.asks.fsck_wanted is not None
    assert path.many.asks.fsck_wanted is None
