"""A guest with the filesystem under test formatted, mounted in a mode, and the workload's
directory and setup ready: shared by the throughput runs and the recorded power-cut runs."""

import os
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from plugpull.errors import InfraError, ToolMissing, UsageError
from plugpull.guest.contract.backend import Guest
from plugpull.guest.contract.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import create_disk
from plugpull.guest.rig import Rig
from plugpull.sparse import copy_sparse
from plugpull.testbed.fs import Filesystem, Mode
from plugpull.testbed.profiles import DiskProfile
from plugpull.testbed.stack import Stack, top_of

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


def nth(path: Path, index: int) -> Path:
    """Where disk `index`'s file goes beside the first disk's: write.log, write2.log, write3.log..."""
    return path if index == 0 else path.with_name(f"{path.stem}{index + 1}{path.suffix}")


def second(path: Path) -> Path:
    """Where the external log disk's file goes beside the data disk's: write.log -> write2.log."""
    return nth(path, 1)


def disk_count(bed: "BedSpec") -> int:
    """The disks a testbed records: the data disk, and the log disk in the extlog mode; or
    the members of its stack."""
    if bed.stack is not None:
        return bed.stack.disks
    return 2 if bed.mode.external_log else 1


def disk_mibs(bed: "BedSpec") -> list[int]:
    """The sizes of the disks a testbed records, in order."""
    if bed.stack is not None:
        return [bed.disk_mib] * bed.stack.disks
    return [bed.disk_mib] + [EXTERNAL_LOG_MIB] * (disk_count(bed) - 1)


def delayed(m: Guest, disk: str, profile: DiskProfile, mode: Mode) -> str:
    """Put a dm-delay device over the disk; returns its kernel name (dm-0)."""
    sectors = int(m.run(f"blockdev --getsz /dev/{disk}").check().text)
    table = profile.dm_table(sectors, f"/dev/{disk}", mode.write_cache, flushes_honoured=not mode.lying)
    m.run(f"modprobe dm_delay && dmsetup create pp-delay --table '{table}'").check()
    return m.run("dmsetup info -c --noheadings -o blkdevname pp-delay").check().text.strip()


@dataclass(frozen=True)
class BedSpec:
    """What a testbed is: the filesystem in a mode on a disk, ready for a workload.

    `profile` adds a disk's flush and write-through latency (dm-delay) under the filesystem.
    `real_disk`: a block device passed through instead of the emulated disk; it is
    reformatted (the caller has the user's consent), and its flushes are its own.
    `stack`: layers between the filesystem and the disks (testbed/stack), which then are its
    members, each with the mode's write cache, all recorded.
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
    stack: Stack | None = None


@contextmanager
def testbed(directory: Path, bed: BedSpec, rig: Rig, write_log: Path | None = None,
            base_copy: Path | None = None, timeout: float = 600.0):
    """Yield a Testbed. With `write_log`, the disks under test are recorded (write.log,
    write2.log...); `base_copy` receives a copy of each freshly formatted disk (base.img,
    base2.img...: the bases of every crash state)."""
    fs, mode, workload, real_disk = bed.fs, bed.mode, bed.workload, bed.real_disk
    directory.mkdir(parents=True, exist_ok=True)
    if real_disk is not None and (write_log is not None or base_copy is not None):
        raise UsageError("a real disk is for throughput runs; crash states are modelled on an emulated disk")
    if real_disk is not None and bed.stack is not None:
        raise UsageError("a real disk is passed through as it is: not with --stack")
    disks = [real_disk] if real_disk else [create_disk(directory / name, mib)
                                           for name, mib in zip(_DISK_NAMES, disk_mibs(bed))]
    try:
        if bed.stack is not None:
            format_in_guest(rig, bed, disks, directory)
        else:
            format_disks(fs, mode, disks[0], disks[1] if len(disks) > 1 else None)
        logs = [None if write_log is None else nth(write_log, i) for i in range(len(disks))]
        for i, (disk, log) in enumerate(zip(disks, logs)):
            if base_copy is not None:
                copy_sparse(disk, nth(base_copy, i))
            if log is not None:
                log.write_bytes(b"")
        host_flush = bed.host_flush
        if host_flush is None:
            host_flush = write_log is None and not mode.lying
        specs = [DiskSpec(disks[0], bed.bus, mode.write_cache, host_flush=host_flush, write_log=logs[0],
                          host_device=real_disk is not None)]
        for disk, log in zip(disks[1:], logs[1:]):
            specs.append(DiskSpec(disk, bed.bus, True, host_flush=False, write_log=log) if mode.external_log
                         else replace(specs[0], path=disk, write_log=log))
        spec = MachineSpec(disks=tuple(specs), payload=workload.payload(), memory_mib=workload.memory_mib())
        with rig.machine(spec, console_log=directory / "console.log", name="testbed") as m:
            yield _ready(m, bed, len(disks), timeout)
    finally:
        if real_disk is None:
            for disk in disks:
                disk.unlink(missing_ok=True)


_DISK_NAMES = ("disk.img", *(f"disk{i}.img" for i in range(2, 9)))


def _ready(m: Guest, bed: BedSpec, count: int, timeout: float) -> Testbed:
    """The filesystem mounted in its mode on the guest's disks (through the stack, if any),
    and the workload's setup done."""
    fs, mode = bed.fs, bed.mode
    names = [m.run(f"readlink /dev/pp-disk{i}").check().text.strip() for i in range(count)]
    name = names[0]
    if bed.stack is not None:
        name = top_of(m.run(bed.stack.command("open", names), timeout=timeout).check().text)
    if bed.profile is not None and bed.profile.adds_delay:
        name = delayed(m, name, bed.profile, mode)
    for cmd in mode.guest_setup(fs, name):
        m.run(cmd).check()
    m.run(mount_command(fs, mode, name)).check()
    queue = m.run(f"cat /sys/block/{name}/queue/write_cache").text.strip()
    setup = bed.workload.setup(MOUNTPOINT)
    if setup:
        m.run(setup, timeout=timeout).check()
    return Testbed(m, name, queue)


def mount_command(fs: Filesystem, mode: Mode, name: str) -> str:
    """The guest command that mounts /dev/NAME in the mode and makes the workload's directory."""
    options = [*fs.mount_options, *mode.mount_options(fs)] + (["logdev=/dev/pp-disk1"] if mode.external_log else [])
    opt = f"-o {','.join(options)} " if options else ""
    return (f"mkdir -p {MOUNTPOINT} && mount -t {fs.mount_type} {opt}/dev/{name} {MOUNTPOINT} "
            f"&& mkdir -p {MOUNTPOINT}/pp && sync")


def format_in_guest(rig: Rig, bed: BedSpec, disks: list[Path], directory: Path) -> None:
    """Build the stack on fresh disks and make the filesystem on its top, in a guest of its
    own whose disks are not recorded: the formatted disks are the crash states' bases."""
    spec = MachineSpec(disks=tuple(DiskSpec(disk, bed.bus, True, host_flush=False) for disk in disks))
    with rig.machine(spec, console_log=directory / "format-console.log", name="format") as m:
        names = [m.run(f"readlink /dev/pp-disk{i}").check().text.strip() for i in range(len(disks))]
        top = top_of(m.run(bed.stack.command("create", names), timeout=600).check().text)
        m.run(" ".join(bed.fs.mkfs_argv(f"/dev/{top}")), timeout=600).check()
        m.run(f"{bed.stack.command('close')} && sync").check()
