"""The only worker of an in-process Dask cluster closed in the middle of a check: the run
ends with one line naming the worker lost, not Dask's `FutureCancelledError`."""

import threading
import time
from types import SimpleNamespace

import pytest

from plugpull.check.verdict import Observation
from plugpull.cluster import worker as cluster_worker
from plugpull.cluster.bundle import pack
from plugpull.cluster.crash_coordinator import ClusterJudge
from plugpull.cluster.crash_task import state_names
from plugpull.cluster.lost import WorkerLost
from tests.unit.cluster.test_cluster import make_record, planned_of

distributed = pytest.importorskip("distributed")


class SlowChecker:
    """A checker that takes a while per state, long enough to lose its worker meanwhile."""

    started = threading.Event()

    def __init__(self, rig, workers, **settings):
        pass

    def check(self, states, collect=None):
        SlowChecker.started.set()
        time.sleep(3)
        return [Observation(0, 0) for _ in states]


def test_the_only_worker_lost_mid_check_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster_worker, "Checker", SlowChecker)
    SlowChecker.started.clear()
    rec = make_record(tmp_path / "rec")
    jobs, planned = planned_of(rec)
    bundle = pack(rec)
    names = state_names(bundle.digest, jobs, planned, 3, ["tar"] * len(planned.plans))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster) as client:
        client.register_plugin(cluster_worker.PlugpullPlugin(tmp_path / "w", SimpleNamespace(
            image=SimpleNamespace(key="img"))))
        (address,) = client.scheduler_info()["workers"]

        def lose_the_worker():
            SlowChecker.started.wait(30)
            cluster.sync(cluster.workers[0].close, reason="killed by the test")

        loser = threading.Thread(target=lose_the_worker)
        loser.start()
        try:
            with pytest.raises(WorkerLost) as lost:
                ClusterJudge(cluster.scheduler_address, retries=0).check(bundle, names, {}, "img", per_task=2)
        finally:
            loser.join()
    said = str(lost.value)
    assert f"lost worker {address} in the middle of the check" in said and "\n" not in said
