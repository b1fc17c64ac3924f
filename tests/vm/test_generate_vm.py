"""Generated workloads in guests: each program runs in the recording guest, the checker guest
collects the tree, the host's model oracle judges it. With barriers nothing a completed
persistence point owes may be lost; without them (ext4 nobarrier, no flush reaches the disk)
some reordered state must differ from what the points owe."""

import pytest

from plugpull.crash.spec import CrashSpec

pytestmark = pytest.mark.vm

# A rename made durable through its new name, a hard link through its directory, an xattr
# through its file: three rules of the oracle, and pp-xattr in both guests.
WORKLOADS = ("gen:seq1-000227", "gen:seq1-000141", "gen:seq1-000345")
STATES = 10


def spec(fs: str, mode: str, workload: str) -> CrashSpec:
    return CrashSpec(fs=fs, mode=mode, workload=workload, models=("reorder",), states=STATES,
                     seed=1, trigger="end")


@pytest.mark.parametrize("fs", ["ext4", "xfs"])
@pytest.mark.parametrize("workload", WORKLOADS)
def test_barrier_keeps_what_the_points_owe(crash_run, fs, workload):
    run = crash_run(spec(fs, "barrier", workload))
    assert sum(s.acks_required for s in run.states) > 0, "no state owed anything"
    assert [(s.cut, s.verdict, s.reason) for s in run.states if s.verdict != "clean"] == []


def test_nobarrier_loses_what_a_point_owed(crash_run):
    """A loss the oracle names: data-loss, not a checker that failed on every state."""
    run = crash_run(spec("ext4", "nobarrier", "gen:seq1-000227"))
    assert run.summary["data-loss"] > 0, [(s.cut, s.verdict, s.reason) for s in run.states]
    assert run.summary["infra-error"] == 0
