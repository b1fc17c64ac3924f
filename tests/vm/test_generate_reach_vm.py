"""The sixth table's operations in guests, on the host's kernel with barriers: a workload of
each new family recorded, crashed around its points and judged by the oracle, every state
clean. Eviction (drop_caches between steps) and the points of a name the step did not touch on
ext4; reflink on btrfs and xfs, where it is done; copy_file_range on ext4, where it is a copy."""

import pytest

from plugpull.generate.space import workload_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = pytest.mark.vm

WORKLOADS = [
    ("ext4", "link A/foo A/bar, sync; unlink A/bar; evict, fsync-any A/foo"),  # fstests generic/106's steps
    ("ext4", "write.append A/foo; creat A/bar, fsync-any A/foo"),
    ("btrfs", "reflink.range A/foo A/bar, fsync A/bar"),
    ("xfs", "reflink.file B/bar A/bar, fdatasync A/bar"),
    ("ext4", "copy A/foo B/bar, fsync B/bar"),
]


@pytest.mark.parametrize("fs, text", WORKLOADS, ids=[f"{fs}-{t.split()[0]}" for fs, t in WORKLOADS])
def test_barrier_keeps_what_the_points_owe(crash_run, fs, text):
    judged_clean_with_barriers(crash_run, fs, workload_of(text))
