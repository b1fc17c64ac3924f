"""The tenth table's operations in guests, on the host's kernel with barriers: the nested
directory moved into the other directory, a file made at its old name and fsynced, then moved
where the directory went and fsynced again (fstests generic/784's steps), a link into the nested
directory and the fsync of its parent (generic/498's, unsynced setup), and a rename to the third
name with its fsync (generic/552's last step), recorded, crashed around their points and judged
by the oracle: every state clean, on ext4 and xfs."""

import pytest

from plugpull.generate.space import workload_of
from tests.vm.generated import judged_clean_with_barriers

# a seq-3 id is found by counting seq 3 (a minute of CPU, over ten under load, before the guest boots) where
# the cache does not keep its counts yet
pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

GENERIC_784 = "move-dir.dir A/C B/C; move-dir.creat A/C, fsync A/C; move-dir.file A/C B/foo, fsync B/foo"
GENERIC_498 = "nested.mkdir A/C; creat B/foo, fsync B/foo; nested-link B/foo A/C/foo, fsync A"
WORKLOADS = [
    ("ext4", GENERIC_784, True), ("xfs", GENERIC_784, True),
    ("ext4", GENERIC_498, False), ("xfs", "third.rename A/bar A/baz, fsync A/baz", True),
]


@pytest.mark.parametrize("fs, text, synced", WORKLOADS, ids=["784-ext4", "784-xfs", "498-ext4", "baz-xfs"])
def test_barrier_keeps_what_the_tenth_tables_points_owe(crash_run, fs, text, synced):
    judged_clean_with_barriers(crash_run, fs, workload_of(text, synced))
