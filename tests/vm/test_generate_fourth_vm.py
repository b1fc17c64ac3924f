"""The fifteenth table's fourth name and the fifo setup in guests, on the host's kernel with
barriers, on btrfs: generic/526's steps (four names in A) and generic/479's (A/foo a fifo,
renamed to the third name, linked back, a file made at the fourth name), each recorded, crashed
around its points and judged by the oracle: every state clean (the fifo comes back a fifo, with
its names)."""

import pytest

from plugpull.generate.space import space_of
from plugpull.generate.tree import FIFO
from tests.vm.generated import judged_clean_with_barriers

pytestmark = pytest.mark.vm

GENERIC_526 = "seq4.four-names-277893"  # third.rename A/foo A/baz; fourth.rename A/bar A/qux; third.link ...
GENERIC_479 = "seq4f.four-names-209352"  # the fifo setup; creat A/bar, fsync A/bar; ...; fourth.creat A/qux, fsync


def test_barrier_keeps_what_the_fourth_names_points_owe(crash_run):
    workload = space_of(GENERIC_526).parse(GENERIC_526)
    assert "fourth" in [s.op.family for s in workload.steps]
    judged_clean_with_barriers(crash_run, "btrfs", workload)


def test_barrier_keeps_the_fifo_and_its_names(crash_run):
    workload = space_of(GENERIC_479).parse(GENERIC_479)
    assert workload.made.fifo and workload.trees[-1].inode("A/baz").kind == FIFO
    judged_clean_with_barriers(crash_run, "btrfs", workload)
