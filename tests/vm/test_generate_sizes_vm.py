"""The ninth table's operations in guests, on the host's kernel with barriers: fstests
generic/059's sub-page punches and generic/325's ranged msyncs on ext4, generic/101's truncate
down and up and generic/512's tiny file with a fallocate past its end on xfs, each recorded,
crashed around its points and judged by the oracle: every state clean, a state after the last
point among them."""

import pytest

from plugpull.generate.space import workload_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = pytest.mark.vm

WORKLOADS = [
    ("ext4", "punch.sub-page A/foo; punch.tail A/foo, fsync A/foo"),  # generic/059
    ("ext4", "mmap.ends A/foo, msync-head A/foo; mmap.remap A/foo, msync-tail A/foo"),  # generic/325
    ("xfs", "resize.down A/foo; resize.up A/foo, fsync A/foo"),  # generic/101
    ("xfs", "creat A/foo; tiny.write A/foo; tiny.falloc A/foo, fsync A/foo"),  # generic/512
]


@pytest.mark.parametrize("fs, text", WORKLOADS, ids=[f"{fs}-{text.split()[0]}" for fs, text in WORKLOADS])
def test_barrier_keeps_what_the_ninth_tables_points_owe(crash_run, fs, text):
    judged_clean_with_barriers(crash_run, fs, workload_of(text))
