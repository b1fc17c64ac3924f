"""The thirteenth table's operations in guests, on the host's kernel with barriers, on btrfs made
without no-holes (`btrfs+holes`): generic/695's steps at 1/512 of its sizes (a truncate up of a
new file, a write and sync, two punches, the second next to a hole, and fsync), recorded,
crashed around their points and judged by the oracle: every state clean (the punched ranges
read as zeros after the fsync's log replay)."""

import pytest

from plugpull.generate.space import space_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

GENERIC_695 = "seq5.hole-merge-006592"  # creat; holes.grow; holes.write-mid, sync; holes.punch; holes.punch-end, fsync


def test_barrier_keeps_what_generic_695s_steps_points_owe_without_no_holes(crash_run):
    workload = space_of(GENERIC_695).parse(GENERIC_695)
    assert [s.op.variant for s in workload.steps][1:] == ["grow", "write-mid", "punch", "punch-end"]
    judged_clean_with_barriers(crash_run, "btrfs+holes", workload)
