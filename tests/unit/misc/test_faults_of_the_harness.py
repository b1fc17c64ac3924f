"""The harness's own faults: a host disk that fills, signals, leftovers, a real disk in use.

Each ends as the README promises: one line, the exit code of a harness failure (3) or of
an interruption (128 + the signal), no QEMU process of the run, no temp dir, no partial
results, and no scratch left once the next run has started.
"""

import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import threading

import pytest
from tests.fake_backend import FakeBackend, Plan

from plugpull import paths
from plugpull.cli.matrix import checked_real_disk
from plugpull.crash.record import Trigger, record
from plugpull.crash.crashrun import run_crash
from plugpull.crash.spec import CrashSpec
from plugpull.errors import DiskFull, UsageError
from plugpull.guest.contract.config import Accel
from plugpull.guest.image.build import GuestImage, build_image
from plugpull.guest.rig import Rig
from plugpull.paths import sweep_stale_tempdirs
from plugpull.workdirs import make_workdir
from plugpull.powerloss.crashstate import materialize
from plugpull.diskspace import space_is_fatal
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.workloads import FsyncFiles

IMAGE = GuestImage("fake", Path("/nonexistent/kernel"), Path("/nonexistent/initramfs"), "6.1.0-fake")
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="mounting and loop devices need root")


def host(*argv: str) -> str:
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"{argv[0]} failed here: {out.stderr.strip()}")
    return out.stdout.strip()


@pytest.fixture
def small_fs(tmp_path):
    """Make a tmpfs of the given MiB under tmp_path; each is unmounted at the end."""
    mounted = []

    def make(mib: int) -> Path:
        where = tmp_path / f"tmpfs-{len(mounted)}"
        where.mkdir()
        host("mount", "-t", "tmpfs", "-o", f"size={mib}m", "plugpull-test", str(where))
        mounted.append(where)
        return where

    yield make
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def loop_device(tmp_path):
    backing = tmp_path / "backing.img"
    with open(backing, "wb") as f:
        f.truncate(64 << 20)
    dev = host("losetup", "--find", "--show", str(backing))
    yield Path(dev)
    subprocess.run(["losetup", "-d", dev], check=False)


# --- disk full -------------------------------------------------------------------------------

@AS_ROOT
def test_a_run_that_cannot_fit_its_disk_is_refused_before_any_guest_boots(small_fs):
    out = small_fs(16) / "run"
    backend = FakeBackend([])
    spec = CrashSpec(fs="ext4", workload="fsync-files", disk_mib=64, states=2)
    with pytest.raises(DiskFull, match=r"no space left on .*run: recording the disk under test needs up to "
                                       r"64 MiB, \d+ MiB free"):
        run_crash(spec, Rig(IMAGE, Accel.TCG, backend), out)
    assert backend.guests == [] and not out.exists()


@AS_ROOT
def test_disk_full_while_building_a_state_leaves_nothing_partial(small_fs, tmp_path):
    base = tmp_path / "base.img"
    base.write_bytes(os.urandom(4 << 20))
    log = tmp_path / "write.log"
    log.write_bytes(b"")
    full = small_fs(1)
    with pytest.raises(DiskFull, match=f"no space left on {full}$"):
        with space_is_fatal(full):
            materialize(base, log, [], full / "state.img")
    assert list(full.iterdir()) == []


@AS_ROOT
def test_disk_full_while_building_the_image_leaves_nothing_in_the_cache(small_fs):
    cache = small_fs(4)
    with pytest.raises(DiskFull, match=f"no space left on {cache}$"):
        build_image(root=cache)
    assert [p.name for p in cache.iterdir()] == [".lock"]


def test_a_guest_paused_on_a_full_host_disk_stops_the_recording_at_once(tmp_path):
    backend = FakeBackend([Plan(ack_lines=("ack 1",), io_error={"nospace": True, "reason": "No space left"})])
    bed = BedSpec(filesystem("ext4"), mode("barrier"), FsyncFiles(count=4), disk_mib=64)
    started = time.monotonic()
    with pytest.raises(DiskFull, match=f"no space left on {tmp_path / 'rec'}: QEMU paused the guest"):
        record(tmp_path / "rec", bed, Trigger.parse("acks:3"), Rig(IMAGE, Accel.TCG, backend), timeout=60)
    assert time.monotonic() - started < 30, "not the workload's timeout"
    [guest] = backend.guests
    assert not guest.alive()
    assert not (tmp_path / "rec" / "record.json").exists() and not (tmp_path / "rec" / "disk.img").exists()


def test_a_guest_paused_on_another_host_error_is_a_harness_failure_too(tmp_path):
    from plugpull.errors import InfraError

    backend = FakeBackend([Plan(io_error={"nospace": False, "reason": "Input/output error"})])
    bed = BedSpec(filesystem("ext4"), mode("barrier"), FsyncFiles(count=4), disk_mib=64)
    with pytest.raises(InfraError, match="host I/O error: Input/output error") as caught:
        record(tmp_path / "rec", bed, Trigger.parse("acks:3"), Rig(IMAGE, Accel.TCG, backend), timeout=60)
    assert not isinstance(caught.value, DiskFull)


def test_space_is_fatal_leaves_other_errors_alone(tmp_path):
    with pytest.raises(PermissionError):
        with space_is_fatal(tmp_path):
            raise PermissionError(errno.EACCES, "denied")


# --- leftovers --------------------------------------------------------------------------------

def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_run_that_fails_leaves_no_out_dir(tmp_path):
    out = tmp_path / "crash-x"
    backend = FakeBackend([Plan(boots=False)])
    spec = CrashSpec(fs="ext4", workload="fsync-files", disk_mib=64, states=2)
    with pytest.raises(Exception, match="never boots"):
        run_crash(spec, Rig(IMAGE, Accel.TCG, backend), out)
    assert not out.exists()


# --- a real disk in use -----------------------------------------------------------------------

@AS_ROOT
def test_a_real_disk_mounted_through_another_node_is_refused(loop_device, tmp_path):
    host("mkfs.ext4", "-q", str(loop_device))
    alias = tmp_path / "alias"
    os.mknod(alias, 0o600 | 0o060000, os.stat(loop_device).st_rdev)
    assert checked_real_disk(str(alias), erase=True) == str(alias), "free, it is accepted"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    host("mount", str(loop_device), str(mnt))
    try:
        with pytest.raises(UsageError, match=f"--real-disk {alias}: in use .*refuses an exclusive open"):
            checked_real_disk(str(alias), erase=True)
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@AS_ROOT
def test_a_real_disk_under_a_device_mapper_target_is_refused(loop_device):
    name = f"plugpull-test-{os.getpid()}"
    sectors = host("blockdev", "--getsz", str(loop_device))
    host("dmsetup", "create", name, "--table", f"0 {sectors} linear {loop_device} 0")
    try:
        dm = Path(os.path.realpath(f"/dev/mapper/{name}")).name
        with pytest.raises(UsageError, match=f"in use \\(held by {dm}\\)"):
            checked_real_disk(str(loop_device), erase=True)
    finally:
        subprocess.run(["dmsetup", "remove", name], check=False)


def write_one_partition(image: Path, start: int, sectors: int) -> None:
    """An MBR with one Linux partition: the entry at byte 446, the signature at 510."""
    entry = bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + start.to_bytes(4, "little") + sectors.to_bytes(4, "little")
    with open(image, "r+b") as f:
        f.seek(446)
        f.write(entry)
        f.seek(510)
        f.write(b"\x55\xaa")


@AS_ROOT
def test_a_real_disk_whose_partition_is_mounted_is_refused(tmp_path):
    backing = tmp_path / "parted.img"
    with open(backing, "wb") as f:
        f.truncate(64 << 20)
    write_one_partition(backing, start=2048, sectors=(64 << 11) - 2048)
    dev = host("losetup", "--find", "--show", "--partscan", str(backing))
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        if not Path(f"{dev}p1").exists():
            pytest.skip("no partition nodes for loop devices here")
        host("mkfs.ext4", "-q", f"{dev}p1")
        host("mount", f"{dev}p1", str(mnt))
        with pytest.raises(UsageError, match="in use"):
            checked_real_disk(dev, erase=True)
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        subprocess.run(["losetup", "-d", dev], check=False)


def test_holders_are_read_for_the_device_and_its_partitions(tmp_path, monkeypatch):
    from plugpull.guest import blockdev

    rdev = os.stat("/dev/null").st_rdev
    disk = tmp_path / "devices" / "sdz"
    (disk / "holders").mkdir(parents=True)
    (disk / "holders" / "dm-3").mkdir()
    (disk / "sdz1" / "holders" / "md127").mkdir(parents=True)
    (disk / "sdz1" / "partition").write_text("1\n")
    (tmp_path / "by-number").mkdir()
    (tmp_path / "by-number" / f"{os.major(rdev)}:{os.minor(rdev)}").symlink_to(disk)
    monkeypatch.setattr(blockdev, "SYS_DEV_BLOCK", tmp_path / "by-number")
    assert blockdev.holders(Path("/dev/null")) == ["dm-3", "md127 on sdz1"]
    assert blockdev.in_use(Path("/dev/null")) == "held by dm-3, md127 on sdz1"



# --- a run stopped by a signal or a full disk, in a guest ---------------------------------------

SMALL_RUN = ("--fs", "ext4", "--mode", "barrier", "--disk-mib", "64", "--workers", "1", "--batch", "4",
             "--model", "prefix")
EXIT_BY_SIGNAL = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGKILL: -9}


class CrashProcess:
    """`plugpull crash` as a subprocess, its output read as it comes, its QEMU children watched."""

    def __init__(self, results: Path, *argv: str):
        self.out, self.json, self.tmp = results / "crash-run", results / "run.json", results / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "plugpull", "crash", *argv, "--out", str(self.out), "--json", str(self.json),
             "-vv"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
            env={**os.environ, "TMPDIR": str(self.tmp)})
        self.lines: list[str] = []
        self.seen_qemu: set[int] = set()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def qemu_children(self) -> set[int]:
        """QEMU processes this run started (its direct children: QEMU runs in a session of its own)."""
        found = set()
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                text = status.read_text()
            except OSError:
                continue
            if f"\nPPid:\t{self.proc.pid}\n" in text and "Name:\tqemu-system" in text:
                found.add(int(status.parent.name))
        self.seen_qemu |= found
        return found

    def wait_for(self, text: str, qemu: bool, timeout: float = 240.0) -> None:
        """Until `text` is in the output (and then a QEMU child is up, with `qemu`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if any(text in line for line in self.lines) and (not qemu or self.qemu_children()):
                return
            time.sleep(0.2)
        raise AssertionError(f"never saw {text!r}: {''.join(self.lines[-20:])}")

    def finish(self, timeout: float = 120.0) -> int:
        rc = self.proc.wait(timeout)
        time.sleep(0.2)
        return rc

    def qemu_left(self) -> list[int]:
        return [pid for pid in self.seen_qemu if qemu_alive(pid)]


def qemu_alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "Name:\tqemu-system" in status and "State:\tZ" not in status


def assert_nothing_left_after_the_next_run(run: CrashProcess, monkeypatch) -> None:
    """No QEMU, no partial JSON; the temp dirs and scratch are gone once a later run starts."""
    __tracebackhide__ = True
    assert run.qemu_left() == [], "QEMU outlived the run"
    assert not run.json.exists() and not list(run.json.parent.glob(".run.json.*"))
    monkeypatch.setattr(paths, "temp_root", lambda: run.tmp)
    sweep_stale_tempdirs()
    shutil.rmtree(make_workdir(run.out.parent / "next-run"))
    assert list(run.tmp.iterdir()) == [], "temp dirs left"
    assert list(run.out.parent.glob("*/.work-*")) == [], "scratch left"


@pytest.mark.vm
@pytest.mark.parametrize("phase", ["recording", "checking"])
@pytest.mark.parametrize("signum", list(EXIT_BY_SIGNAL), ids=lambda s: signal.Signals(s).name)
def test_a_signal_stops_the_run_and_leaves_nothing_behind(tmp_path, monkeypatch, signum, phase):
    count = 400 if phase == "recording" else 4  # the recording outlasts the wait, or ends at once
    run = CrashProcess(tmp_path / "results", *SMALL_RUN, "--workload", "fsync-files", "--param", f"count={count}",
                       "--trigger", "end", "--states", "2")
    # once the guest is up: a signal during the QMP handshake still prints an abandoned asyncio
    # task's traceback at exit, a defect of its own
    run.wait_for("sh /tmp/workload.sh" if phase == "recording" else "checker booted", qemu=True)
    os.killpg(run.proc.pid, signum) if signum == signal.SIGINT else os.kill(run.proc.pid, signum)
    assert run.finish() == EXIT_BY_SIGNAL[signum], "".join(run.lines[-20:])
    assert not any("Traceback" in line for line in run.lines), "".join(run.lines)
    if signum != signal.SIGKILL:
        assert not run.out.exists(), "a run stopped before it saved anything leaves no out dir"
    assert_nothing_left_after_the_next_run(run, monkeypatch)


@pytest.mark.vm
@AS_ROOT
def test_disk_full_during_recording_stops_at_once(small_fs, monkeypatch):
    run = CrashProcess(small_fs(80), *SMALL_RUN, "--workload", "big-copy", "--param", "mib=48",
                       "--trigger", "end", "--states", "2")
    assert run.finish(timeout=300) == 3, "".join(run.lines[-20:])
    errors = [line for line in run.lines if line.startswith("plugpull:")]
    assert len(errors) == 1 and "no space left on" in errors[0] and "QEMU paused the guest" in errors[0], errors
    assert not run.out.exists()
    assert_nothing_left_after_the_next_run(run, monkeypatch)


@pytest.mark.vm
@AS_ROOT
def test_not_enough_space_for_the_states_is_refused_before_building_them(small_fs, monkeypatch):
    run = CrashProcess(small_fs(100), *SMALL_RUN, "--workload", "big-copy", "--param", "mib=20",
                       "--trigger", "end", "--states", "5")
    assert run.finish(timeout=300) == 3, "".join(run.lines[-20:])
    errors = [line for line in run.lines if line.startswith("plugpull:")]
    assert len(errors) == 1 and re.search(r"no space left on \S+: building \d+ crash states needs up to "
                                          r"\d+ MiB, \d+ MiB free", errors[0]), errors
    assert not any("checking" in line for line in run.lines), "no state was checked"
    assert not run.out.exists()
    assert_nothing_left_after_the_next_run(run, monkeypatch)


def test_an_image_removed_from_the_cache_is_named_not_a_dead_guest(tmp_path):
    from plugpull.errors import LaunchError
    from plugpull.guest.contract.config import Accel, MachineSpec
    from plugpull.guest.image.build import GuestImage
    from plugpull.guest.qemu.machine import Machine
    (tmp_path / "initramfs.cpio").write_bytes(b"")
    image = GuestImage("k", tmp_path / "kernel", tmp_path / "initramfs.cpio", "6.1")
    with pytest.raises(LaunchError, match="kernel is gone"):
        Machine(MachineSpec(), image, Accel.TCG).launch()
