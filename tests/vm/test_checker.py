"""The checker guest on states whose verdicts are known, and the fast path (many states per
boot) against the one-boot-per-state path: the same states must get the same verdicts."""

import re
import shutil
import subprocess

import pytest

from plugpull.check.checker import Checker
from plugpull.check.verdict import Verdict, classify
from plugpull.guest.contract.config import DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import Machine, create_disk
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.fs import filesystem
from plugpull.testbed.workloads import FsyncFiles

pytestmark = pytest.mark.vm

XFS = filesystem("xfs")
WL = FsyncFiles(count=2, seed=1)


@pytest.fixture(scope="module")
def states(tmp_path_factory, image, accel):
    """Four XFS states: intact, missing an acked file, corrupted metadata that mounts, and
    not a filesystem at all."""
    d = tmp_path_factory.mktemp("states")
    good, partial = (create_disk(d / f"{name}.img", 320) for name in ("good", "partial"))
    for path in (good, partial):
        subprocess.run(XFS.mkfs_argv(str(path)), check=True)
    with Machine(MachineSpec(disks=(DiskSpec(good), DiskSpec(partial))), image, accel) as m:
        for n in (0, 1):
            m.run(f"mkdir -p /mnt/{n} && mount -t xfs /dev/pp-disk{n} /mnt/{n} && mkdir /mnt/{n}/pp").check()
            m.write_file("/tmp/wl.sh", WL.script(f"/mnt/{n}"))
            m.run("sh /tmp/wl.sh").check()
        m.run("rm /mnt/1/pp/f00002 && umount /mnt/0 /mnt/1").check()
    corrupt = d / "corrupt.img"
    shutil.copyfile(good, corrupt)
    corrupt_free_space_btree(corrupt)
    garbage = create_disk(d / "garbage.img", 320)
    return {"good": (good, Verdict.CLEAN), "partial": (partial, Verdict.DATA_LOSS),
            "corrupt": (corrupt, Verdict.FS_CORRUPT), "garbage": (garbage, Verdict.UNMOUNTABLE)}


def corrupt_free_space_btree(image) -> None:
    """Break the magic of AG 1's free-space btree root: mount does not read it, fsck does."""
    where = subprocess.run(["xfs_db", "-r", "-c", "agf 1", "-c", "addr bnoroot", "-c", "stack", str(image)],
                           capture_output=True, text=True, check=True).stdout
    offset = int(re.search(r"byte offset (\d+)", where).group(1))
    with open(image, "r+b") as f:
        f.seek(offset)
        f.write(b"XXXX")


def verdicts(checker: Checker, states: dict) -> dict:
    names = list(states)
    observations = checker.check([CrashState.of(states[n][0]) for n in names])
    return {n: classify(XFS, o, WL, [1, 2]).verdict for n, o in zip(names, observations)}


def test_checker_flags_each_kind_of_damage(states, rig):
    got = verdicts(Checker(rig, XFS, batch=16), states)
    assert got == {name: expected for name, (_, expected) in states.items()}


def test_fast_path_agrees_with_one_boot_per_state(states, rig):
    fast = verdicts(Checker(rig, XFS, batch=16), states)
    slow = verdicts(Checker(rig, XFS, batch=1), states)
    assert fast == slow
    assert Verdict.FS_CORRUPT in fast.values()


def test_checking_leaves_the_state_image_untouched(states, rig):
    path = states["good"][0]
    before = path.read_bytes()
    Checker(rig, XFS).check([CrashState.of(path)])
    assert path.read_bytes() == before
