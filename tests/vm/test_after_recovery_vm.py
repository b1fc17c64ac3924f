"""The step after recovery in a real checker guest: on two small ext4 states, one clean and one
whose root holds a directory at the name the checker makes its new file under, the `tree`
collect makes new names in the first (clean, and the host's fsck after the writes finds
nothing) and cannot in the second (not-writable, with the guest's words)."""

import subprocess

import pytest

from plugpull.check.checker import Checker, Plug
from plugpull.check.verdict import Verdict, classify
from plugpull.guest.qemu.machine import create_disk
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.fs import filesystem
from plugpull.testbed.workloads import FsyncFiles

pytestmark = pytest.mark.vm

EXT4 = filesystem("ext4")


def made(path, *dirs: str):
    create_disk(path, 16)
    subprocess.run(EXT4.mkfs_argv(str(path)), check=True, capture_output=True)
    for d in dirs:
        subprocess.run(["debugfs", "-w", "-R", f"mkdir {d}", str(path)], check=True, capture_output=True)
    return CrashState.of(path)


def test_a_name_that_cannot_be_made_after_recovery_is_not_writable(tmp_path, rig):
    states = [made(tmp_path / "fine.img", "pp", "pp/A"), made(tmp_path / "taken.img", "pp", "pp-new")]
    observations = Checker(rig, EXT4, plug=Plug.HOT).check(states, collect=["tree", "tree"])
    fine, taken = (classify(EXT4, o, FsyncFiles(count=1, seed=1), []) for o in observations)
    assert (fine.verdict, observations[0].create_error, observations[0].fsck_rc) == (Verdict.CLEAN, "", 0)
    assert taken.verdict is Verdict.NOT_WRITABLE and "pp-new: Is a directory" in taken.reason
