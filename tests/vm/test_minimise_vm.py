"""Minimise a real failing state: an ext4 nobarrier fsync-files data-loss state, judged by
the checker guests, down to a handful of writes that `replay` reproduces."""

import json

import pytest

from plugpull.crash.crashrun import replay, run_crash
from plugpull.crash.spec import CrashSpec
from plugpull.minimise.artifact import write_artifact
from plugpull.minimise.culprits import minimise

pytestmark = pytest.mark.vm

SPEC = CrashSpec(fs="ext4", mode="nobarrier", workload="fsync-files", params=(("count", 30),),
                 models=("cache:32:random",), states=4, seed=1, trigger="end", disk_mib=64)


def test_a_nobarrier_data_loss_state_is_minimised_and_replayed(rig, tmp_path):
    run = run_crash(SPEC, rig, tmp_path / "crash")
    lossy = [s for s in run.states if s.verdict == "data-loss"]
    assert lossy, [s.verdict for s in run.states]
    artifact = tmp_path / "crash" / "states" / lossy[-1].artifact.split("/states/")[1]

    found = minimise(artifact, rig, tmp_path / "scratch")
    assert found.answer["verdict"] == "data-loss"
    assert 1 <= len(found.culprits) <= 10
    assert found.checks == found.judged  # nothing was judged twice
    print(f"minimised {len(found.variation.changes(found.reference))} changes from {found.reference} "
          f"to {len(found.culprits)} in {found.checks} checks, {found.seconds:.0f} s")

    again = minimise(artifact, rig, tmp_path / "scratch")  # resumed from the cache: no guest boots
    assert again.culprits == found.culprits and again.checks == 0

    small = write_artifact(found, tmp_path / "minimised", tmp_path / "scratch2")
    state = json.loads((small / "state.json").read_text())
    assert state["cut"] <= 10 or found.reference == "prefix"
    assert state["minimised"]["legality"]["legal"]
    replayed = replay(small, rig, tmp_path / "replay")
    assert replayed["verdict"] == "data-loss"
    assert replayed["digest"] == replayed["digest_expected"]
    assert "plugpull replay" in (small / "summary.txt").read_text()
