"""The twelfth table's operations in guests, on the host's kernel with barriers, on btrfs: a
snapshot of the root subvolume made in A, deleted, and A fsynced (fstests btrfs/118's steps,
unsynced setup), and the same with A removed and made again before its fsync (btrfs/120's, a
shape of four steps), recorded, crashed around their points and judged by the oracle: every
state clean (mountable: the log replays)."""

import pytest

from plugpull.generate.space import space_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]  # the seq-2 id is found by counting seq 2

BTRFS_118 = "seq2u-2942688"  # snapshot.make A/snap; snapshot.delete A/snap, fsync A
BTRFS_120 = "seq4u.snapshot-rmdir-000019"  # snapshot.make A/snap; snapshot.delete A/snap; rmdir A; mkdir A, fsync A


@pytest.mark.parametrize("ident", [BTRFS_118, BTRFS_120], ids=["118", "120"])
def test_barrier_keeps_what_the_snapshot_steps_points_owe(crash_run, ident):
    workload = space_of(ident).parse(ident)
    assert {s.op.family for s in workload.steps} & {"snapshot"}
    judged_clean_with_barriers(crash_run, "btrfs", workload)
