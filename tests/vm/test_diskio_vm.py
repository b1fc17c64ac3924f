"""The disk's counters read in a real guest: pp-smallfiles gets each phase's writes, and an
fsync workload's flushes reach the disk with barriers and never without."""

import pytest

from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.profiles import profile
from plugpull.testbed.workloads import workload
from plugpull.throughput.measure import measure


def run(rig, tmp_path, mode_name: str, name: str, **params):
    bed = BedSpec(filesystem("ext4"), mode(mode_name), workload(name, **params), 256, profile=profile("hdd"))
    return measure(tmp_path / f"{name}-{mode_name}", bed, rig)


@pytest.mark.vm
def test_the_disk_counters_come_with_each_phase(rig, tmp_path):
    small = run(rig, tmp_path, "barrier", "smallfiles", count=300)
    assert [p.io is not None for p in small.phases] == [True] * 5
    assert small.io.device == "sda" and sum(p.io.writes for p in small.phases) <= small.io.writes
    assert all(p.io.seconds == p.seconds for p in small.phases)
    fsynced = {m: run(rig, tmp_path, m, "fsync-files", count=20).io for m in ("barrier", "nobarrier")}
    assert fsynced["barrier"].flushes >= 20 and fsynced["nobarrier"].flushes == 0
