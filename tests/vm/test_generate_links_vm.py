"""The links setup in guests, on the host's kernel with barriers: generic/040's workload (A/foo
given 3,000 more links, a sync, then one link more and A/foo's fsync), recorded, crashed around
its points and judged by the oracle, the 3,002 names and the link count compared: every state
clean, on ext4 and btrfs."""

import pytest

from plugpull.crash.spec import CrashSpec
from plugpull.generate.space import Space, steps_of, whole_space

# the 3,000 links are made by as many ln in the guest's sh: 35 s in a TCG guest (2026-11-29)
pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

STATES = 10
GENERIC_040 = "link A/foo A/bar, fsync A/foo"


@pytest.mark.parametrize("fs", ["ext4", "btrfs"])
def test_barrier_keeps_the_links_the_setup_made_and_the_one_more(crash_run, fs):
    workload = Space(1, many=True).workload(whole_space(1).locate(steps_of(GENERIC_040)))
    assert workload.links == 3000
    run = crash_run(CrashSpec(fs=fs, mode="barrier", workload=f"gen:{workload.ident}", models=("reorder",),
                              states=STATES, seed=1, trigger="end"))
    assert any(s.acks_required >= 2 for s in run.states), "no state after the last point"  # acks 0..1
    assert run.summary["infra-error"] == 0
    assert [(s.cut, s.verdict, s.reason) for s in run.states if s.verdict != "clean"] == []
