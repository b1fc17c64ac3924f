"""The power-cut claim on Debian's kernels fetched by version: on debian:6.12 and debian:7.3,
fsync-files loses nothing acknowledged with barriers and loses acknowledged data without them,
on ext4 and xfs. Small counts: it runs in CI. The kernels are fetched once and cached; the
test skips only when the archive cannot be reached and they are not cached yet."""

import time

import pytest

from plugpull.guest.contract.config import Accel
from plugpull.guest.rig import prepare_rig
from plugpull.kernels import ArchiveUnreachable, Kernels
from plugpull.crash.crashrun import run_crash
from plugpull.crash.spec import CrashSpec

pytestmark = [pytest.mark.vm, pytest.mark.slow]

KERNELS = ("debian:6.12", "debian:7.3")
SAFE = ("drop-unflushed", "reorder")
STATES = 6
WORKLOAD = (("count", 16),)
TRIGGER = "acks:10"


@pytest.fixture(scope="module")
def resolved() -> dict:
    """Each kernel resolved twice: the second time from the cache, with nothing downloaded."""
    kernels, first = Kernels(), {}
    try:
        for spec in KERNELS:
            first[spec] = kernels.resolve(spec)
    except ArchiveUnreachable as e:
        pytest.skip(f"Debian's archive cannot be reached and the kernels are not cached: {e}")
    for spec in KERNELS:
        started = time.monotonic()
        again = kernels.resolve(spec)
        assert not again.downloaded, f"{spec} was downloaded again"
        assert again.kernel.path == first[spec].kernel.path
        print(f"{spec}: {again.kernel.release}, {first[spec].seconds} first, "
              f"{time.monotonic() - started:.2f} s cached")
    return first


@pytest.fixture(scope="module", params=KERNELS)
def kernel_rig(request, pytestconfig, resolved):
    got = resolved[request.param]
    rig = prepare_rig(Accel(pytestconfig.getoption("accel")), got.source)
    assert rig.image.kernel_release == got.kernel.release
    return rig


@pytest.fixture(params=["ext4", "xfs"])
def fs(request):
    return request.param


def spec(fs: str, mode: str, models: tuple) -> CrashSpec:
    return CrashSpec(fs=fs, mode=mode, workload="fsync-files", params=WORKLOAD, models=models,
                     states=STATES, seed=1, trigger=TRIGGER)


def unsafe(run) -> list:
    return [(s.model, s.cut, s.verdict, s.reason) for s in run.states if s.verdict != "clean"]


def test_barrier_loses_nothing(kernel_rig, fs, tmp_path):
    run = run_crash(spec(fs, "barrier", SAFE), kernel_rig, tmp_path / "out")
    assert run.record["kernel"] == kernel_rig.image.kernel_release
    assert run.record["log"]["flushes"] > 0
    assert len(run.states) >= len(SAFE) * STATES
    assert sum(s.acks_required for s in run.states) > 0, "no state owed anything"
    assert unsafe(run) == []


def test_nobarrier_loses_acknowledged_data(kernel_rig, fs, tmp_path):
    run = run_crash(spec(fs, "nobarrier", ("drop-unflushed",)), kernel_rig, tmp_path / "out")
    assert run.record["kernel"] == kernel_rig.image.kernel_release
    assert run.record["log"]["flushes"] == 0, "nobarrier still sent flushes"
    assert "data-loss" in [s.verdict for s in run.states]
    assert run.summary["infra-error"] == 0 and run.summary["kernel-crash"] == 0
