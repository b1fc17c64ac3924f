"""The eighth table's step in guests, on the host's kernel with barriers: `again`, no operation
and a point right after the last one, recorded, crashed around its points and judged by the
oracle, every state clean: on ext4 with fstests generic/034's steps (fsync of a directory, then
of the new file in it), and on xfs with two of them from an unsynced setup (the file made in
the same transaction fsynced, then its directory)."""

import pytest

from plugpull.generate.space import workload_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = pytest.mark.vm

WORKLOADS = [
    ("ext4", "creat A/foo, fsync A; again, fsync-any A/foo", True),  # generic/034
    ("xfs", "again, fsync-any A/foo; again, fsync-any A", False),
]


@pytest.mark.parametrize("fs, text, synced", WORKLOADS, ids=[fs for fs, _, _ in WORKLOADS])
def test_barrier_keeps_what_the_second_point_in_a_row_owes(crash_run, fs, text, synced):
    judged_clean_with_barriers(crash_run, fs, workload_of(text, synced))
