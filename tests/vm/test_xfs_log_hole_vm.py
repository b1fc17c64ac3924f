"""The XFS finding (docs/findings.md), in its smallest form and without a recording: on a fresh
filesystem, one log record with nothing before it back to the head. Right after the head,
recovery takes it as a torn write and mounts; 4032 blocks past it (as in the minimised
bonnie++ state), the record ends 4096 blocks past a lost block and recovery fails."""

import shutil
import subprocess

import pytest

from plugpull.check.checker import Checker
from plugpull.minimise.explain import xfs_layout, xfs_log_bytes
from plugpull.powerloss.crashstate import CrashState
from plugpull.powerloss.writelog import SECTOR
from plugpull.reproducer.loghole import FAR, HEAD, record_bytes
from plugpull.testbed.fs import filesystem

pytestmark = pytest.mark.vm


def with_record(tmp_path, name: str, block: int):
    """A fresh 1 GiB XFS whose log holds one record of cycle 1 (a bad CRC) at `block`."""
    if shutil.which("mkfs.xfs") is None:
        pytest.skip("mkfs.xfs is not installed (make deps)")
    image = tmp_path / f"{name}.img"
    with open(image, "wb") as f:
        f.truncate(1 << 30)
    subprocess.run(["mkfs.xfs", "-q", "-f", str(image)], check=True, capture_output=True)
    start, _ = xfs_log_bytes(xfs_layout(image))
    with open(image, "r+b") as f:
        f.seek(start + block * SECTOR)
        f.write(record_bytes(block))
    return CrashState.of(image)


def test_a_record_4096_blocks_past_a_lost_one_makes_the_log_unrecoverable(rig, tmp_path):
    near, far = with_record(tmp_path, "near", HEAD), with_record(tmp_path, "far", FAR)
    checker = Checker(rig, filesystem("xfs"), batch=2, workers=1)
    seen_near, seen_far = checker.check([near, far], collect=["none", "none"])
    assert seen_near.mount_rc == 0, seen_near.kernel_log[-2000:]
    assert seen_far.mount_rc != 0
    assert "didn't find previous header" in seen_far.kernel_log, seen_far.kernel_log[-2000:]
