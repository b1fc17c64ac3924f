"""A guest with the filesystem under test formatted, mounted in a mode, and the workload's
directory and setup ready: shared by the throughput runs and the recorded power-cut runs."""

import os
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from plugpull.guest.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.rig import Rig
from plugpull.powerloss.crashstate import copy_sparse
from plugpull.errors import InfraError, ToolMissing, UsageError
from plugpull.lab.fs import Filesystem, Mode
from plugpull.lab.profiles import DiskProfile
from plugpull.guest.backend import Guest
from plugpull.guest.machine import create_disk

MOUNTPOINT = "/mnt/test"
EXTERNAL_LOG_MIB = 64


@dataclass(frozen=True)
class Testbed:
    machine: Guest
    disk: str  # the kernel's name of the disk under test (sda, sdb...)
    queue_write_cache: str


def run_host(argv: list[str], env: tuple[tuple[str, str], ...] = ()) -> None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **dict(env)})
    except FileNotFoundError:
        raise ToolMissing(argv[0], "install its Debian package (make deps)") from None
    if out.returncode != 0:
        raise InfraError(f"{' '.join(argv)} failed: {out.stderr.strip()}")


def format_disks(fs: Filesystem, mode: Mode, disk: Path, log_disk: Path | None) -> None:
    """mkfs on the host: the same Debian xfsprogs/e2fsprogs the guest has, and no boot needed."""
    if log_disk is None:
        run_host(fs.mkfs_argv(str(disk)), fs.mkfs_env)
    elif fs.mount_type == "xfs":
        run_host(fs.mkfs_argv(str(disk), ("-l", f"logdev={log_disk},size={EXTERNAL_LOG_MIB}m")), fs.mkfs_env)
    else:
        raise UsageError(f"the extlog mode is implemented for xfs only, not {fs.name}")


def second(path: Path) -> Path:
    """Where the external log disk's file goes beside the data disk's: write.log -> write2.log."""
    return path.with_name(f"{path.stem}2{path.suffix}")


def delayed(m: Guest, disk: str, profile: DiskProfile, mode: Mode) -> str:
    """Put a dm-delay device over the disk; returns its kernel name (dm-0)."""
    sectors = int(m.run(f"blockdev --getsz /dev/{disk}").check().text)
    table = profile.dm_table(sectors, f"/dev/{disk}", mode.write_cache, flushes_honoured=not mode.lying)
    m.run(f"modprobe dm_delay && dmsetup create pp-delay --table '{table}'").check()
    return m.run("basename $(readlink -f /sys/block/dm-*)").check().text.strip()


@dataclass(frozen=True)
class BedSpec:
    """What a testbed is: the filesystem in a mode on a disk, ready for a workload.

    `profile` adds a disk's flush and write-through latency (dm-delay) under the filesystem.
    `real_disk`: a block device passed through instead of the emulated disk; it is
    reformatted (the caller has the user's consent), and its flushes are its own.
    `host_flush`: whether a guest flush reaches the host (fdatasync); by default it does
    unless the disk is recorded or lies about flushes: that is what makes barrier and
    nocache cost something in a throughput run."""

    fs: Filesystem
    mode: Mode
    workload: object
    disk_mib: int = 512
    bus: Bus = Bus.AHCI
    profile: DiskProfile | None = None
    real_disk: Path | None = None
    host_flush: bool | None = None


@contextmanager
def testbed(directory: Path, bed: BedSpec, rig: Rig, write_log: Path | None = None,
            base_copy: Path | None = None, timeout: float = 600.0):
    """Yield a Testbed. With `write_log`, the disk under test is recorded; `base_copy`
    receives a copy of the freshly formatted disk (the base of every crash state)."""
    fs, mode, workload, real_disk = bed.fs, bed.mode, bed.workload, bed.real_disk
    directory.mkdir(parents=True, exist_ok=True)
    if real_disk is not None and (write_log is not None or base_copy is not None):
        raise UsageError("a real disk is for throughput runs; crash states are modelled on an emulated disk")
    disk = real_disk or create_disk(directory / "disk.img", bed.disk_mib)
    log_disk = create_disk(directory / "logdisk.img", EXTERNAL_LOG_MIB) if mode.external_log else None
    format_disks(fs, mode, disk, log_disk)
    log_disk_log = second(write_log) if write_log is not None and log_disk is not None else None
    if base_copy is not None:
        copy_sparse(disk, base_copy)
        if log_disk is not None:
            copy_sparse(log_disk, second(base_copy))
    for log in (write_log, log_disk_log):
        if log is not None:
            log.write_bytes(b"")
    host_flush = bed.host_flush
    if host_flush is None:
        host_flush = write_log is None and not mode.lying
    disks = [DiskSpec(disk, bed.bus, mode.write_cache, host_flush=host_flush, write_log=write_log,
                      host_device=real_disk is not None)]
    if log_disk is not None:
        disks.append(DiskSpec(log_disk, bed.bus, True, host_flush=False, write_log=log_disk_log))
    spec = MachineSpec(disks=tuple(disks), payload=workload.payload(), memory_mib=workload.memory_mib())
    try:
        with rig.machine(spec, console_log=directory / "console.log", name="testbed") as m:
            name = m.run("readlink /dev/pp-disk0").check().text.strip()
            if bed.profile is not None and bed.profile.adds_delay:
                name = delayed(m, name, bed.profile, mode)
            for cmd in mode.guest_setup(fs, name):
                m.run(cmd).check()
            options = [*fs.mount_options, *mode.mount_options(fs)] + (["logdev=/dev/pp-disk1"] if log_disk else [])
            opt = f"-o {','.join(options)} " if options else ""
            m.run(f"mkdir -p {MOUNTPOINT} && mount -t {fs.mount_type} {opt}/dev/{name} {MOUNTPOINT} "
                  f"&& mkdir -p {MOUNTPOINT}/pp && sync").check()
            queue = m.run(f"cat /sys/block/{name}/queue/write_cache").text.strip()
            setup = workload.setup(MOUNTPOINT)
            if setup:
                m.run(setup, timeout=timeout).check()
            yield Testbed(m, name, queue)
    finally:
        if real_disk is None:
            disk.unlink(missing_ok=True)
        if log_disk is not None:
            log_disk.unlink(missing_ok=True)
