"""Blocks preallocated past a file's end in guests, on the host's kernel with barriers: fstests
generic/677's steps in blocks (a direct-I/O write, two preallocations past the end a block
apart, sync, a write into the file and fsync), recorded, crashed around their points and judged
by the oracle with pp-tree's extents: every state clean on btrfs, the extents past the end
there after the fsync's log replay (the rule `fsync-extents`)."""

import pytest

from plugpull.generate.space import space_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

GENERIC_677 = "seq4.eof-gap-115346"  # dwrite.append; falloc-eof.keep-size; prealloc.gap, sync; write.overwrite, fsync


def test_barrier_keeps_the_blocks_preallocated_past_the_end_on_btrfs(crash_run):
    workload = space_of(GENERIC_677).parse(GENERIC_677)
    assert [s.op.variant for s in workload.steps] == ["append", "keep-size", "gap", "overwrite"]
    assert workload.trees[-1].inode("A/foo").prealloc  # the last point owes blocks past the end
    judged_clean_with_barriers(crash_run, "btrfs", workload)
