"""Frozen configuration: what a machine and its disks look like. Built once, never mutated."""

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class Bus(StrEnum):
    """AHCI (SATA) and IDE are the buses under test; SCSI (virtio-scsi) carries the crash
    states to the checker guest, where the bus does not matter but the number of disks does."""

    AHCI = "ahci"
    IDE = "ide"
    SCSI = "scsi"


class Accel(StrEnum):
    AUTO = "auto"
    KVM = "kvm"
    TCG = "tcg"


@dataclass(frozen=True)
class DiskSpec:
    """A guest disk on an emulated AHCI or IDE controller.

    `write_cache` is the cache the guest sees (ATA IDENTIFY, `hdparm -W`): on, the guest must
    send FLUSH CACHE for durability, exactly the situation the barrier debate is about.
    `host_flush` makes a guest flush reach the host's storage (fdatasync); turn it off only
    when the host's durability is irrelevant (crash states are modelled from the write log).
    `write_log`, when set, records every write and flush in dm-log-writes format (QEMU's
    blklogwrites driver), while the writes still reach `path`.
    `snapshot` sends the guest's writes to a throwaway overlay that QEMU deletes itself, so
    `path` stays as it was (a crash state keeps its hash although recovery writes to it).
    `host_device`: `path` is a block device passed through (a real disk, for throughput).
    """

    path: Path
    bus: Bus = Bus.AHCI
    write_cache: bool = True
    host_flush: bool = True
    write_log: Path | None = None
    snapshot: bool = False
    host_device: bool = False

    def __post_init__(self):
        if self.snapshot and self.write_log:
            raise ValueError("a snapshot disk records nothing: write_log and snapshot exclude each other")


@dataclass(frozen=True)
class MachineSpec:
    """`payload`: a read-only virtio disk (/dev/vda in the guest) carrying a workload's input,
    e.g. a tar archive that the guest extracts; it stays off the bus under test.
    `scsi_controller`: boot with the virtio-scsi controller even with no disk on it, for
    disks hot-plugged later (a checker guest that stays up)."""

    disks: tuple[DiskSpec, ...] = ()
    payload: Path | None = None
    memory_mib: int = 1024
    cpus: int = 1
    accel: Accel = Accel.AUTO
    kernel_args: tuple[str, ...] = ()
    interactive: bool = False
    scsi_controller: bool = False

    @property
    def bus(self) -> Bus:
        """The controller of the first disk; every disk of a machine shares it."""
        if self.disks:
            return self.disks[0].bus
        return Bus.SCSI if self.scsi_controller else Bus.AHCI

    def test_id(self) -> str:
        if not self.disks:
            return "nodisk"
        d = self.disks[0]
        return f"{d.bus}-wc{int(d.write_cache)}"


@dataclass(frozen=True)
class ChannelFds:
    """File descriptors QEMU inherits: each is one end of a socketpair."""

    qmp: int
    command: int
    ack: int
