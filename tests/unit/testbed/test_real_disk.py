"""A real disk passed through for the throughput side, exercised on a loop device."""

import os
import shutil
import subprocess

import pytest

from plugpull.cli.matrix import checked_real_disk
from plugpull.errors import UsageError
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.workloads import FsyncFiles
from plugpull.throughput.measure import measure

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("losetup"),
                                reason="a loop device needs root and losetup")


@pytest.fixture
def loop_device(tmp_path):
    backing = tmp_path / "backing.img"
    with open(backing, "wb") as f:
        f.truncate(512 << 20)
    dev = subprocess.run(["losetup", "--find", "--show", str(backing)], capture_output=True, text=True)
    if dev.returncode != 0:
        pytest.skip(f"no loop device: {dev.stderr.strip()}")
    yield dev.stdout.strip()
    subprocess.run(["losetup", "-d", dev.stdout.strip()], check=False)


def test_real_disk_needs_consent_and_a_free_block_device(loop_device, tmp_path):
    with pytest.raises(UsageError, match="--erase-real-disk"):
        checked_real_disk(loop_device, erase=False)
    assert checked_real_disk(loop_device, erase=True) == loop_device
    with pytest.raises(UsageError, match="not a block device"):
        checked_real_disk(str(tmp_path), erase=True)


@pytest.mark.vm
def test_throughput_on_a_passed_through_disk(loop_device, rig, tmp_path):
    from pathlib import Path

    bed = BedSpec(filesystem("xfs"), mode("barrier"), FsyncFiles(count=10), real_disk=Path(loop_device))
    result = measure(tmp_path / "run", bed, rig)
    assert result.real_disk == loop_device and result.profile is None
    assert result.phases[0].ops == 10 and result.phases[0].seconds > 0
    assert result.queue_write_cache == "write back"
    with open(loop_device, "rb") as dev:
        assert dev.read(4) == b"XFSB", "the filesystem was made on the device itself"
