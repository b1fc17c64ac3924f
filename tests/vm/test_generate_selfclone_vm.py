"""The eleventh table's clone within one file in guests, on the host's kernel with barriers:
fstests btrfs/098's steps (a block written past the end of a new file and fsynced, then cloned
into the hole before it and fsynced) and generic/588's (two blocks written anew, the second
cloned past the end and fsynced, the first rewritten and fsynced), recorded, crashed around
their points and judged by the oracle: every state clean, on xfs and btrfs."""

import pytest

from plugpull.generate.space import workload_of
from tests.vm.generated import judged_clean_with_barriers

# a seq-3 id is found by counting seq 3 (a minute of CPU, over ten under load, before the guest boots) where
# the cache does not keep its counts yet
pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

BTRFS_098 = "creat A/foo; write.past-eof A/foo, fsync A/foo; self-clone.to-start A/foo, fsync A/foo"
GENERIC_588 = "write.unaligned A/foo; self-clone.past-eof A/foo, fsync A/foo; write.overwrite A/foo, fsync A/foo"
WORKLOADS = [("xfs", BTRFS_098), ("btrfs", BTRFS_098), ("xfs", GENERIC_588), ("btrfs", GENERIC_588)]


@pytest.mark.parametrize("fs, text", WORKLOADS, ids=["098-xfs", "098-btrfs", "588-xfs", "588-btrfs"])
def test_barrier_keeps_what_a_clone_within_one_file_owes(crash_run, fs, text):
    judged_clean_with_barriers(crash_run, fs, workload_of(text))
