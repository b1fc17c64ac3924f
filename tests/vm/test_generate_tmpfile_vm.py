"""The thirteenth table's operation in guests, on the host's kernel with barriers, on btrfs: an
O_TMPFILE file written and fsynced in A, then A fsynced (fstests generic/509's steps), recorded,
crashed around its points and judged by the oracle: every state clean (the log that holds the
nameless inode replays without a warning, no name shows up, and a new name can be made after)."""

import pytest

from plugpull.generate.space import space_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = pytest.mark.vm

GENERIC_509 = "seq1-001426"  # tmpfile.fsync A, fsync A


def test_barrier_keeps_what_the_tmpfile_steps_points_owe(crash_run):
    workload = space_of(GENERIC_509).parse(GENERIC_509)
    assert [s.op.family for s in workload.steps] == ["tmpfile"]
    judged_clean_with_barriers(crash_run, "btrfs", workload)
