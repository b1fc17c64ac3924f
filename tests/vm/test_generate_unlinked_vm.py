"""The seventh table's operation in guests, on the host's kernel with barriers: a file's last
name unlinked while the program holds it open, then fsync of the open descriptor (fstests
generic/764's steps), recorded, crashed around its point and judged by the oracle, every state
clean, the point owing the name's absence: on ext4, and on xfs with generic/771's steps. Not
btrfs: the guests' default kernel (Debian 12's 6.1) lacks its fix, 5e85262e542d, and brings the
name back (docs/hunt-results.md)."""

import pytest

from plugpull.generate.space import workload_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = pytest.mark.vm

WORKLOADS = [
    ("ext4", "unlink-open A/foo, fsync-open A/foo", True),  # generic/764
    ("xfs", "unlink-open A/foo, fsync-open A/foo; creat A/bar, fsync A/bar", False),  # generic/771
]


@pytest.mark.parametrize("fs, text, synced", WORKLOADS, ids=[fs for fs, _, _ in WORKLOADS])
def test_barrier_keeps_the_unlink_the_fsync_of_the_open_file_owes(crash_run, fs, text, synced):
    judged_clean_with_barriers(crash_run, fs, workload_of(text, synced))
