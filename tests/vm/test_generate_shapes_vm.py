"""Shapes' longer workloads in guests, on the host's kernel with barriers: btrfs/243's five
steps (shape `renames`: a name made and fsynced, two renames, an expanding truncate and the
fsync of another name, a second fsync) and generic/640's four (shape `evict-rename`: inode
eviction between a directory's fsync and a rename), recorded on ext4, crashed around their
points and judged by the oracle, every state clean."""

import pytest

from plugpull.generate.space import shape_space, steps_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = pytest.mark.vm

WORKLOADS = [
    ("renames", "creat A/bar, fsync A/bar; rename.file A/bar B/bar; rename.file A/foo B/foo; "
                "resize.up B/bar, fsync-any B/foo; again, fsync-any B/bar"),  # btrfs/243
    ("evict-rename", "creat A/bar, fsync A; evict; rename.file A/foo B/foo; creat B/bar, fsync B/bar"),  # generic/640
]


@pytest.mark.parametrize("shape, text", WORKLOADS, ids=[shape for shape, _ in WORKLOADS])
def test_barrier_keeps_what_a_shape_workload_owes_on_ext4(crash_run, shape, text):
    space = shape_space(shape)
    judged_clean_with_barriers(crash_run, "ext4", space.workload(space.locate(steps_of(text))))
