"""The hot-plug path (its fsck on the host) against the batch path and one boot per state
(fsck in the guest), in real checker guests: the same small ext4 states get the same
verdicts, one of each kind that can be built, and a checker guest killed in the middle of a
run leaves no state without a result, whether the hot guests were booted or restored from a
saved one."""

import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.unit.crash.test_kernel_crash import Watched, kill_when_hooked

from plugpull.check import hostfsck
from plugpull.check.checker import Checker, Plug
from plugpull.check.hotguest import HotGuest
from plugpull.check.verdict import Verdict, classify
from plugpull.guest.qemu import snapshot
from plugpull.guest.contract.config import DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import Machine, create_disk
from plugpull.guest.rig import Rig
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.fs import filesystem
from plugpull.testbed.workloads import FsyncFiles

pytestmark = pytest.mark.vm

EXT4 = filesystem("ext4")
WL = FsyncFiles(count=2, seed=1)
PANIC_HOOK = "echo c > /proc/sysrq-trigger"


@pytest.fixture(scope="module")
def states(tmp_path_factory, image, accel):
    """Six 16 MiB ext4 states: intact, missing an acked file, a file whose link count is
    wrong (mounts, fsck objects), a zeroed superblock, an intact one whose check panics the
    checker's kernel (through a test hook), and one that panics it by itself (errors=panic,
    a directory block that fails its checksum when the oracle reads it)."""
    d = tmp_path_factory.mktemp("hot-states")
    good, partial = (create_disk(d / f"{name}.img", 16) for name in ("good", "partial"))
    for path in (good, partial):
        subprocess.run(EXT4.mkfs_argv(str(path)), check=True, capture_output=True)
    with Machine(MachineSpec(disks=(DiskSpec(good), DiskSpec(partial))), image, accel) as m:
        for n in (0, 1):
            m.run(f"mkdir -p /mnt/{n} && mount -t ext4 /dev/pp-disk{n} /mnt/{n} && mkdir /mnt/{n}/pp").check()
            m.write_file("/tmp/wl.sh", WL.script(f"/mnt/{n}"))
            m.run("sh /tmp/wl.sh").check()
        m.run("rm /mnt/1/pp/f00002 && umount /mnt/0 /mnt/1").check()
    corrupt, zeroed, panics, bad_dir = (d / f"{name}.img" for name in ("corrupt", "zeroed", "panics", "bad-dir"))
    for path in (corrupt, zeroed, panics, bad_dir):
        shutil.copyfile(good, path)
    damage_directory(bad_dir)
    subprocess.run(["debugfs", "-w", "-R", "set_inode_field /pp/f00001 links_count 7", str(corrupt)],
                   check=True, capture_output=True)
    with open(zeroed, "r+b") as f:
        f.seek(1024)
        f.write(bytes(1024))
    return {"good": (good, Verdict.CLEAN), "partial": (partial, Verdict.DATA_LOSS),
            "corrupt": (corrupt, Verdict.FS_CORRUPT), "zeroed": (zeroed, Verdict.UNMOUNTABLE),
            "panics": (panics, Verdict.KERNEL_CRASH), "bad-dir": (bad_dir, Verdict.KERNEL_CRASH)}


def damage_directory(image) -> None:
    """errors=panic, and garbage in the first block of the workload's directory."""
    subprocess.run(["tune2fs", "-e", "panic", str(image)], check=True, capture_output=True)
    block = int(subprocess.run(["debugfs", "-R", "bmap /pp 0", str(image)], check=True,
                               capture_output=True, text=True).stdout.split()[-1])
    size = int(next(line.split()[-1] for line in subprocess.run(
        ["dumpe2fs", "-h", str(image)], check=True, capture_output=True, text=True).stdout.splitlines()
        if line.startswith("Block size:")))
    with open(image, "r+b") as f:
        f.seek(block * size + 24)
        f.write(b"\xff" * 64)


def verdicts(checker: Checker, states: dict) -> dict:
    names = list(states)
    checker.hooks = {names.index("panics"): PANIC_HOOK} if "panics" in names else {}
    observations = checker.check([CrashState.of(states[n][0]) for n in names])
    return {n: classify(EXT4, o, WL, [1, 2]).verdict for n, o in zip(names, observations)}


def saved_checker(rig: Rig):
    return rig.backend.saved_state(HotGuest.SPEC, rig.image, rig.accel)


def test_hot_plug_batch_and_one_boot_per_state_give_the_same_verdicts(states, rig):
    expected = {name: verdict for name, (_, verdict) in states.items()}
    hot = verdicts(Checker(rig, EXT4, plug=Plug.HOT), states)  # all but "panics" in one command, then alone
    assert hot == expected
    assert saved_checker(rig).is_file(), "the hot guests were restored from a saved one"
    assert verdicts(Checker(rig, EXT4, plug=Plug.BATCH, batch=16), states) == hot
    assert verdicts(Checker(rig, EXT4, plug=Plug.BATCH, batch=1), states) == hot


def test_hot_plugged_states_stay_byte_identical_and_one_guest_command_checks_them(states, rig, monkeypatch):
    """... and the host's fsck reads each of them through QEMU, leaving no export behind."""
    picked = {n: s for n, s in states.items() if n not in ("panics", "bad-dir")}
    before = {name: path.read_bytes() for name, (path, _) in picked.items()}
    backend = WatchedSaving(rig.backend)
    fscked = []

    def host_fsck(mount_type, path, timeout):
        fscked.append(path)
        return real_fsck(mount_type, path, timeout)
    real_fsck = hostfsck.run
    monkeypatch.setattr(hostfsck, "run", host_fsck)
    got = verdicts(Checker(Rig(rig.image, rig.accel, backend), EXT4, plug=Plug.HOT), picked)
    assert got == {name: verdict for name, (_, verdict) in picked.items()}
    assert backend.guests.qsize() == 1, "pp-check --many failed: its states went to a fresh guest"
    if Path("/dev/fuse").exists():  # without FUSE the guest's own fsck checks them (test_host_fsck.py)
        assert len(fscked) == len(picked), "the host's fsck did not check every state"
    assert not any(path.exists() for path in fscked), "an export was left behind"
    assert {name: path.read_bytes() for name, (path, _) in picked.items()} == before


@dataclass
class WatchedSaving(Watched):
    """A watched backend that keeps saved guests as the one it wraps does."""

    def saved_state(self, *args):
        return self.inner.saved_state(*args)


@pytest.mark.parametrize("restore", [True, False], ids=["restored", "booted"])
def test_a_hot_checker_killed_mid_run_leaves_no_state_without_a_result(states, rig, restore):
    if restore:
        snapshot.ensure_saved(lambda: rig.backend.machine(HotGuest.SPEC, rig.image, rig.accel), saved_checker(rig))
    backend = WatchedSaving(rig.backend)
    killer = threading.Thread(target=kill_when_hooked, args=(backend,), daemon=True)
    killer.start()
    checker = Checker(Rig(rig.image, rig.accel, backend), EXT4, plug=Plug.HOT, restore=restore,
                      hooks={1: "echo hooked > /dev/plugpull-ack; sleep 3600"})
    names = ["good", "partial", "zeroed", "corrupt"]
    observations = checker.check([CrashState.of(states[n][0]) for n in names])
    killer.join(60)
    got = [classify(EXT4, o, WL, [1, 2]).verdict for o in observations]
    assert got == [Verdict.CLEAN, Verdict.DATA_LOSS, Verdict.UNMOUNTABLE, Verdict.FS_CORRUPT]
    assert backend.guests.qsize() == 1, "one fresh guest took over the rest of the run"
    assert (backend.guests.get().restore is not None) is restore


def test_luns_wrap_at_255_and_a_reused_lun_shows_its_new_disk(states, rig):
    """A kept checker guest plugs thousands of states: LUNs wrap at 255 (one of 256 and above
    never shows up in the guest) and a LUN used before finds the disk plugged in now."""
    from plugpull.guest.qemu import hotplug
    from plugpull.guest.contract.config import Bus
    good = states["good"][0]
    guest = HotGuest(rig, set())
    try:
        guest.machine._luns = hotplug.Luns(first=hotplug.MAX_LUN - 2)
        seen = []
        for _ in range(5):
            plugged = guest.machine.attach_disk(DiskSpec(good, Bus.SCSI, True, host_flush=False, snapshot=True))
            seen.append(int(plugged.serial.removeprefix("plugpull")))
            assert guest.machine.run("test -b /dev/%s", plugged.device).rc == 0
            guest.machine.detach_disk(plugged)
        assert seen == [253, 254, 255, 253, 254]
    finally:
        guest.close()
