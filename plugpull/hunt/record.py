"""Record many generated workloads in one guest, each on a fresh copy of one formatted image.

The filesystem is made once per hunt (`formatted`); each workload gets a fresh copy of that
image on a disk the recording guest keeps plugged in (`KeptDisk`), on its virtio-scsi
controller with the mode's write cache, under a blklogwrites node that logs every write and
flush as a disk given at boot is logged. The host copies the image into the disk's file
(sparse, in place) before each workload, and the guest drops what it cached of the disk
before it mounts it, as the checker's slots do (`check.slots`): so no hot-plug, SCSI scan and
unplug is paid per workload (0.02 to 0.07 CPU s of the guest's under TCG). The
disk's one write log holds workload after workload; a workload's record is the stretch of it
from where it stood when the workload started to where it stood when the workload said it
was done (`cut_out`), so the unmount that follows is not part of it. A disk whose log has
grown past `ROTATE_BYTES` is unplugged and a fresh one plugged in. With `keep_disk` off, each
workload's disk is plugged in (its SCSI scan waited for by its start command) and out, as
before the disk was kept: what bench/hunt_paths.py compares. A record's base is the
formatted image, linked, not copied.

A kernel failure while a workload runs is that workload's finding (`Failed.kernel`); the
guest is then replaced before the next one. A workload that exits non-zero is a failure of
the harness or the generator (`Failed.kernel` empty), never a verdict.
"""

import logging
import os
import shlex
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from plugpull.check.hotguest import HotGuest
from plugpull.crash.record import (START_WORKLOAD, TROUBLE_ON_THE_CONSOLE, Record, Trigger, acks_until,
                                   recording_meta, stamped_acks)
from plugpull.errors import GuestError
from plugpull.guest.contract.backend import AttachedDisk, await_disk_command
from plugpull.guest.contract.config import Bus, DiskSpec
from plugpull.guest.rig import Rig
from plugpull.powerloss.writelog import MAGIC, SECTOR, SUPER, VERSION
from plugpull.sparse import copy_sparse
from plugpull.testbed.bed import MOUNTPOINT, format_disks, mount_command
from plugpull.testbed.fs import Filesystem, Mode
from plugpull.testbed.workloads.base import GuestWorkload

log = logging.getLogger(__name__)

BUS = Bus.SCSI
ROTATE_BYTES = 256 << 20  # a kept disk whose log has grown past this is replaced before the next workload


@dataclass(frozen=True)
class Failed:
    """A workload that left no record: `kernel`, the guest kernel's failure (a finding), or
    else `why`, the harness's or the generator's."""

    why: str
    kernel: dict | None = None


def formatted(fs: Filesystem, mode: Mode, disk_mib: int, path: Path) -> Path:
    """A fresh filesystem image: every workload's disk starts as a copy of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(disk_mib << 20)
    format_disks(fs, mode, path, None)
    os.chmod(path, 0o644)
    return path


@dataclass(frozen=True)
class KeptDisk:
    """The recording guest's disk, plugged in for many workloads (`path`, in the guest
    `device`), and the write log QEMU appends their entries to."""

    attached: AttachedDisk
    path: Path
    log: Path

    def position(self) -> int:
        """Where QEMU appends its next entry: the log's end (past the superblock's sector)."""
        return max(os.stat(self.log).st_size, SECTOR)

    def since(self, start: int) -> int:
        """Where the log stands now, as a position in the log of a workload that began at
        `start` (`cut_out`): what its acks are stamped with."""
        return max(os.stat(self.log).st_size, start) - start + SECTOR


def cut_out(log: Path, start: int, end: int, target: Path) -> None:
    """The log's bytes from `start` on as a write log of its own, up to `end`, a position in
    that new log (`KeptDisk.since`): a superblock sector with no entries counted (the reader
    walks past the count, which QEMU's own logs let lag), then those bytes. `start` is where
    an entry begins (the guest was idle); an entry in flight at `end` is left torn, as a log
    cut at its end is."""
    with open(log, "rb") as src, open(target, "wb") as dst:
        dst.write(SUPER.pack(MAGIC, VERSION, 0, SECTOR).ljust(SECTOR, b"\0"))
        src.seek(start)
        left = end - SECTOR
        while left > 0 and (chunk := src.read(min(left, 1 << 20))):
            dst.write(chunk)
            left -= len(chunk)


class Recorder:
    """One recording guest for many workloads: `record` each in turn, then `close`."""

    def __init__(self, rig: Rig, fs: Filesystem, mode: Mode, base: Path, disk_mib: int, timeout: float = 300.0,
                 keep_disk: bool = True):
        self.rig, self.fs, self.mode, self.base, self.disk_mib, self.timeout = rig, fs, mode, base, disk_mib, timeout
        self.keep_disk = keep_disk
        self.boots = self.plugs = 0
        self._guest: HotGuest | None = None
        self._disk: KeptDisk | None = None
        self._running: set = set()

    def record(self, workload: GuestWorkload, directory: Path) -> Record | Failed:
        """The workload's record in `directory` (base.img, write.log, record.json), or why there is none."""
        directory.mkdir(parents=True, exist_ok=True)
        _link_or_copy(self.base, directory / "base.img")
        guest = self._started()
        try:
            disk = self._fresh_disk(guest)
            start = disk.position()
            outcome = self._run(guest, disk, start, workload)
        except BaseException:
            self.close()
            raise
        if isinstance(outcome, Failed):
            if outcome.kernel:
                self.close()  # its kernel failed: the next workload gets a fresh guest
            else:
                self._drop_disk()  # it may still be mounted: the next workload gets a fresh disk
            return outcome
        acks, end, meta = outcome
        write_log = directory / "write.log"
        cut_out(disk.log, start, end, write_log)
        meta.update(self._meta(workload, guest))
        rec = Record(directory, meta, stamped_acks(meta, acks, [write_log], None, None))
        rec.save()
        return rec

    def _run(self, guest: HotGuest, disk: KeptDisk, start: int, workload: GuestWorkload):
        """Mount, run the workload to its end, unmount: (acks, where the log stood at its end,
        meta) or Failed. Acks are stamped with positions in the workload's own log (`cut_out`)."""
        m = guest.machine
        m.acks.set_stamp(lambda: disk.since(start))
        guest.console.set_mark()
        started = time.monotonic()
        said = m.run(self._start_command(disk.attached, workload)).check().text
        if "disk_missing=" in said:
            raise GuestError(f"the workload's disk did not show up in the recording guest ({said.strip()})")
        acks, finished, trouble = acks_until(m, Trigger("end"), disk.log, started, self.timeout, None, guest.console)
        end = disk.since(start)
        seconds = time.monotonic() - started
        trouble = trouble or guest.console.trouble()
        if trouble:
            return Failed(f"kernel {trouble.kind}: {trouble.line}", asdict(trouble))
        if finished != 0:
            detail = m.run("tail -n 5 /tmp/workload.out").text.strip().splitlines()
            return Failed(f"the workload exited {finished} in the guest: {(detail or ['no output'])[-1][:200]}")
        m.run(f"umount {MOUNTPOINT}").check()
        queue = said.partition("queue=")[2].strip()
        return acks, end, {"workload_seconds": seconds, "workload_finished": True, "queue_write_cache": queue}

    def _start_command(self, disk: AttachedDisk, workload: GuestWorkload) -> str:
        """One guest command (each costs a round trip): forget what the guest cached of the
        kept disk (or wait for a disk just plugged in), set it up in the mode, mount it, write
        the workload's script, say the queue's cache, start the script; the shell's builtins
        where they serve (printf, read), as every process costs the guest under TCG."""
        steps = [*self.mode.guest_setup(self.fs, "$dev"), mount_command(self.fs, self.mode, "$dev"),
                 f"printf %s {shlex.quote(workload.script(MOUNTPOINT))} > /tmp/workload.sh",
                 "read -r pp_q < /sys/block/$dev/queue/write_cache", "echo queue=$pp_q", "{ " + START_WORKLOAD + " }"]
        if not disk.device:
            return await_disk_command(disk.serial, "dev") + " && ".join(steps)
        return f"dev={shlex.quote(disk.device)}; " + " && ".join(["blockdev --flushbufs /dev/$dev", *steps])

    def _fresh_disk(self, guest: HotGuest) -> KeptDisk:
        """The kept disk, given the formatted image's bytes: plugged in at the guest's first
        workload, and again once its log has grown past ROTATE_BYTES (without `keep_disk`,
        a disk plugged in for this workload alone)."""
        if self._disk is not None and (not self.keep_disk or self._disk.position() > ROTATE_BYTES):
            self._drop_disk()
        if self._disk is not None:
            copy_sparse(self.base, self._disk.path)
            return self._disk
        where = self.base.parent  # beside the formatted image: the hunt's work dir, not the temp dir
        path, log = where / f"recording{self.plugs}.img", where / f"recording{self.plugs}.write.log"
        copy_sparse(self.base, path)
        log.write_bytes(b"")
        self.plugs += 1
        spec = DiskSpec(path, BUS, self.mode.write_cache, host_flush=False, write_log=log)
        self._disk = KeptDisk(guest.machine.attach_disk(spec, wait=self.keep_disk), path, log)
        return self._disk

    def _drop_disk(self) -> None:
        """Unplug the kept disk and remove its files; the next workload plugs in a fresh one."""
        disk = self._disk
        if disk is None or self._guest is None:
            return
        try:
            self._guest.machine.detach_disk(disk.attached, wait=False)
        except BaseException:
            self.close()
            raise
        self._forget_disk()

    def _forget_disk(self) -> None:
        disk, self._disk = self._disk, None
        if disk is not None:
            disk.path.unlink(missing_ok=True)
            disk.log.unlink(missing_ok=True)

    def _meta(self, workload: GuestWorkload, guest: HotGuest) -> dict:
        return {**recording_meta(self.fs, self.mode, workload, Trigger("end"), self.disk_mib, BUS, self.rig.image),
                "accel": str(guest.machine.accel)}

    def _started(self) -> HotGuest:
        if self._guest is None:
            self._guest = HotGuest(self.rig, self._running)
            self.boots += 1
            self._guest.machine.run(TROUBLE_ON_THE_CONSOLE)
        return self._guest

    def close(self) -> None:
        guest, self._guest = self._guest, None
        try:
            if guest is not None:
                guest.close()
        finally:
            self._forget_disk()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        copy_sparse(source, target)
