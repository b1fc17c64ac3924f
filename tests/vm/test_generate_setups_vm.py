"""The xattrs and quota setups in guests, on the host's kernel with barriers, on btrfs:
generic/745's workload (A/foo given 2,000 xattrs, a sync, a write and A/foo's fsync) and
btrfs/119's (quotas enabled, a sync, a snapshot made and deleted, A/foo renamed and A fsynced),
recorded, crashed around their points and judged by the oracle (745's the 2,000 xattrs
compared): every state clean."""

import pytest

from plugpull.generate.space import space_of
from tests.vm.generated import judged_clean_with_barriers

pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

GENERIC_745 = "seq1x-000026"  # write.overwrite A/foo, fsync A/foo
BTRFS_119 = "seq3q-6411034717"  # snapshot.make snap; snapshot.delete snap; rename.file A/foo A/bar, fsync A


@pytest.mark.parametrize("ident", [GENERIC_745, BTRFS_119], ids=["745", "119"])
def test_barrier_keeps_what_the_setups_points_owe(crash_run, ident):
    workload = space_of(ident).parse(ident)
    assert workload.extra in ("xattrs", "quota") and (workload.made.xattrs == 2000) == (workload.extra == "xattrs")
    judged_clean_with_barriers(crash_run, "btrfs", workload)
