"""The sixteenth table's operations in guests, on the host's kernel with barriers, on btrfs (no-holes,
its default): btrfs/231's steps at 1/8 of its sizes (four ranges around a hole written O_SYNC and
synced, a truncate down and its fsync, the hole cloned past the end and its fsync), and btrfs/166's
quota enable and sync, recorded, crashed around their points and judged by the oracle: every state
clean (the cloned range reads as zeros after the log's replay; a state cut during the rescan
mounts)."""

import pytest

from plugpull.generate.space import space_of, workload_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

BTRFS_231 = "seq4.clone-hole-000046"  # creat; clone-hole.ranges, sync; .truncate, fsync; .clone, fsync


def test_barrier_keeps_what_btrfs_231s_steps_points_owe(crash_run):
    workload = space_of(BTRFS_231).parse(BTRFS_231)
    assert [s.op.variant for s in workload.steps][1:] == ["ranges", "truncate", "clone"]
    judged_clean_with_barriers(crash_run, "btrfs", workload)


def test_barrier_keeps_what_btrfs_166s_quota_enable_and_sync_owe(crash_run):
    judged_clean_with_barriers(crash_run, "btrfs", workload_of("quota.enable, sync"))
