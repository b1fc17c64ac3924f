"""The eleventh table's clone within one file in guests, on the host's kernel with barriers:
fstests btrfs/098's steps (a block written past the end of a new file and fsynced, then cloned
into the hole before it and fsynced) and generic/588's (two blocks written anew, the second
cloned past the end and fsynced, the first rewritten and fsynced), recorded, crashed around
their points and judged by the oracle: every state clean, on xfs and btrfs."""

import pytest

from plugpull.crash.spec import CrashSpec
from plugpull.generate.space import workload_of

# a seq-3 id is found by counting seq 3: a minute of CPU, over ten under load, before the guest boots
pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

STATES = 10
BTRFS_098 = "creat A/foo; write.past-eof A/foo, fsync A/foo; self-clone.to-start A/foo, fsync A/foo"
GENERIC_588 = "write.unaligned A/foo; self-clone.past-eof A/foo, fsync A/foo; write.overwrite A/foo, fsync A/foo"
WORKLOADS = [("xfs", BTRFS_098), ("btrfs", BTRFS_098), ("xfs", GENERIC_588), ("btrfs", GENERIC_588)]


@pytest.mark.parametrize("fs, text", WORKLOADS, ids=["098-xfs", "098-btrfs", "588-xfs", "588-btrfs"])
def test_barrier_keeps_what_a_clone_within_one_file_owes(crash_run, fs, text):
    workload = workload_of(text)
    run = crash_run(CrashSpec(fs=fs, mode="barrier", workload=f"gen:{workload.ident}", models=("reorder",),
                              states=STATES, seed=1, trigger="end"))
    last = len(workload.points())
    assert any(s.acks_required >= last + 1 for s in run.states), "no state after the last point"  # acks 0..last
    assert run.summary["infra-error"] == 0
    assert [(s.cut, s.verdict, s.reason) for s in run.states if s.verdict != "clean"] == []
