"""The central claim: with barriers (or with the write cache off) an fsync-heavy workload loses
nothing it was told is durable, at any cut point, under any of the models; with nobarrier, or
with a disk that ignores flushes, it does.

One recording per filesystem and mode; the lying disk is the barrier recording judged by models
whose flushes do nothing (that is all a lying disk is). Every assertion below is deterministic:
the cut points and models are seeded, so a failure reproduces exactly.
"""

from pathlib import Path

import pytest

from plugpull.crash.crashrun import replay
from plugpull.crash.spec import CrashSpec
from plugpull.results import CrashRun

pytestmark = [pytest.mark.vm, pytest.mark.slow]

SAFE_MODELS = ("drop-unflushed", "reorder")
LYING_MODELS = ("drop-unflushed+lying", "reorder+lying")
STATES = 30
WORKLOAD = (("count", 40),)


def spec(fs: str, mode: str, models: tuple, states: int) -> CrashSpec:
    return CrashSpec(fs=fs, mode=mode, workload="fsync-files", params=WORKLOAD, models=models,
                     states=states, seed=1, trigger="acks:30")


def by_model(run: CrashRun) -> dict:
    out: dict = {}
    for s in run.states:
        out.setdefault(s.model, []).append(s)
    return out


def unsafe(states: list) -> list:
    return [(s.cut, s.verdict, s.reason) for s in states if s.verdict != "clean"]


@pytest.fixture(scope="module", params=["xfs", "ext4"])
def fs(request):
    return request.param


@pytest.fixture(scope="module")
def barrier_run(crash_run, fs):
    return crash_run(spec(fs, "barrier", SAFE_MODELS + LYING_MODELS, STATES))


@pytest.mark.parametrize("model", SAFE_MODELS)
def test_barrier_loses_nothing(barrier_run, model):
    states = by_model(barrier_run)[model]
    assert len(states) >= STATES
    assert sum(s.acks_required for s in states) > 0, "no state owed anything: the cut points missed the workload"
    assert unsafe(states) == []


@pytest.mark.parametrize("model", SAFE_MODELS)
def test_nocache_loses_nothing(crash_run, fs, model):
    run = crash_run(spec(fs, "nocache", (model,), STATES))
    states = by_model(run)[model]
    assert len(states) >= STATES
    assert run.record["queue_write_cache"] == "write through"
    assert unsafe(states) == []


@pytest.mark.parametrize("model", LYING_MODELS)
def test_lying_disk_loses_acknowledged_data(barrier_run, model):
    verdicts = [s.verdict for s in by_model(barrier_run)[model]]
    assert "data-loss" in verdicts


@pytest.fixture(scope="module")
def nobarrier_run(crash_run, fs):
    return crash_run(spec(fs, "nobarrier", SAFE_MODELS, 10))


def test_nobarrier_loses_acknowledged_data(nobarrier_run):
    run = nobarrier_run
    assert run.record["log"]["flushes"] == 0, "nobarrier still sent flushes"
    for model, states in by_model(run).items():
        assert "data-loss" in [s.verdict for s in states], model
    assert run.summary["infra-error"] == 0


def test_replay_rebuilds_the_same_state_and_verdict(nobarrier_run, rig, tmp_path):
    saved = [s for s in nobarrier_run.states if s.artifact]
    assert saved, "no artifact was saved for the states that are not clean"
    first = saved[0]
    r = replay(Path(first.artifact), rig, tmp_path)
    assert r["digest"] == r["digest_expected"]
    assert r["verdict"] == first.verdict == r["verdict_expected"]


def test_external_log_disk_keeps_acknowledged_data_unless_it_lies(crash_run):
    """extlog: both disks recorded, cut at moments sampled across both logs, judged per disk."""
    run = crash_run(spec("xfs", "extlog", SAFE_MODELS + LYING_MODELS, 20))
    assert run.record["log2"]["writes"] > 0 and run.record["log2"]["flushes"] > 0
    states = by_model(run)
    for model in SAFE_MODELS:
        assert len(states[model]) >= 10 and unsafe(states[model]) == []
        assert all(s.cut2 is not None for s in states[model])
    for model in LYING_MODELS:
        assert "data-loss" in [s.verdict for s in states[model]]
