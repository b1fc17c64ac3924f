"""The links setup in guests, on the host's kernel with barriers: generic/040's workload (A/foo
given 3,000 more links, a sync, then one link more and A/foo's fsync), recorded, crashed around
its points and judged by the oracle, the 3,002 names and the link count compared: every state
clean, on ext4 and btrfs."""

import pytest

from plugpull.generate.space import Space, steps_of, whole_space
from tests.vm.generated import judged_clean_with_barriers

# the 3,000 links are made by as many ln in the guest's sh: 35 s in a TCG guest (2026-11-29)
pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

GENERIC_040 = "link A/foo A/bar, fsync A/foo"


@pytest.mark.parametrize("fs", ["ext4", "btrfs"])
def test_barrier_keeps_the_links_the_setup_made_and_the_one_more(crash_run, fs):
    workload = Space(1, extra="links").workload(whole_space(1).locate(steps_of(GENERIC_040)))
    assert workload.made.links == 3000
    judged_clean_with_barriers(crash_run, fs, workload)
