"""Record many generated workloads in one guest, each on a disk of its own plugged in while it runs.

The filesystem is made once per hunt (`formatted`); each workload gets a sparse copy of that
image, plugged into a recording guest that stays up, on its virtio-scsi controller with the
mode's write cache, under a blklogwrites node that logs every write and flush as a disk given
at boot is logged. The workload runs to its end; its log is cut where it stood when the
workload said it was done, so the unmount and the unplug that follow are not part of the
record. Its base is the formatted image, linked, not copied.

A kernel failure while a workload runs is that workload's finding (`Failed.kernel`); the
guest is then replaced before the next one. A workload that exits non-zero is a failure of
the harness or the generator (`Failed.kernel` empty), never a verdict.
"""

import base64
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from plugpull.check.hotguest import HotGuest
from plugpull.crash.record import (START_WORKLOAD, TROUBLE_ON_THE_CONSOLE, Record, Trigger, acks_until,
                                   recording_meta, stamped_acks)
from plugpull.errors import GuestError
from plugpull.guest.contract.backend import await_disk_command
from plugpull.guest.contract.config import Bus, DiskSpec
from plugpull.guest.rig import Rig
from plugpull.sparse import copy_sparse
from plugpull.testbed.bed import MOUNTPOINT, format_disks, mount_command
from plugpull.testbed.fs import Filesystem, Mode
from plugpull.testbed.workloads.base import GuestWorkload

log = logging.getLogger(__name__)

BUS = Bus.SCSI


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


class Recorder:
    """One recording guest for many workloads: `record` each in turn, then `close`."""

    def __init__(self, rig: Rig, fs: Filesystem, mode: Mode, base: Path, disk_mib: int, timeout: float = 300.0):
        self.rig, self.fs, self.mode, self.base, self.disk_mib, self.timeout = rig, fs, mode, base, disk_mib, timeout
        self.boots = 0
        self._guest: HotGuest | None = None
        self._running: set = set()

    def record(self, workload: GuestWorkload, directory: Path) -> Record | Failed:
        """The workload's record in `directory` (base.img, write.log, record.json), or why there is none."""
        directory.mkdir(parents=True, exist_ok=True)
        _link_or_copy(self.base, directory / "base.img")
        disk, write_log = directory / "disk.img", directory / "write.log"
        copy_sparse(self.base, disk)
        write_log.write_bytes(b"")
        guest = self._started()
        try:
            outcome = self._run(guest, workload, disk, write_log)
        except BaseException:
            self.close()
            raise
        finally:
            disk.unlink(missing_ok=True)
        if isinstance(outcome, Failed):
            if outcome.kernel:
                self.close()  # its kernel failed: the next workload gets a fresh guest
            return outcome
        acks, end, meta = outcome
        os.truncate(write_log, end)
        meta.update(self._meta(workload, guest))
        rec = Record(directory, meta, stamped_acks(meta, acks, [write_log], None, None))
        rec.save()
        return rec

    def _run(self, guest: HotGuest, workload: GuestWorkload, disk: Path, write_log: Path):
        """Plug in, mount, run the workload to its end: (acks, log bytes at its end, meta) or Failed."""
        m = guest.machine
        attached = m.attach_disk(DiskSpec(disk, BUS, self.mode.write_cache, host_flush=False, write_log=write_log),
                                 wait=False)
        unplug = True
        try:
            m.acks.set_stamp(lambda: os.stat(write_log).st_size)
            guest.console.set_mark()
            started = time.monotonic()
            said = m.run(self._start_command(attached.serial, workload)).check().text
            if "disk_missing=" in said:
                raise GuestError(f"the workload's disk did not show up in the recording guest ({said.strip()})")
            acks, finished, trouble = acks_until(m, Trigger("end"), write_log, started, self.timeout, None,
                                                 guest.console)
            end = os.stat(write_log).st_size
            seconds = time.monotonic() - started
            trouble = trouble or guest.console.trouble()
            if trouble:
                unplug = False
                return Failed(f"kernel {trouble.kind}: {trouble.line}", asdict(trouble))
            if finished != 0:
                detail = m.run("tail -n 5 /tmp/workload.out").text.strip().splitlines()
                return Failed(f"the workload exited {finished} in the guest: {(detail or ['no output'])[-1][:200]}")
            m.run(f"umount {MOUNTPOINT}").check()
            queue = said.partition("queue=")[2].strip()
            return acks, end, {"workload_seconds": seconds, "workload_finished": True, "queue_write_cache": queue}
        except BaseException:
            unplug = False  # the guest goes (`record`): an unplug now could only hide why
            raise
        finally:
            if unplug:
                m.detach_disk(attached, wait=False)  # the next workload's command waits for its own disk

    def _start_command(self, serial: str, workload: GuestWorkload) -> str:
        """One guest command (each costs a round trip): wait for the disk, set it up in the
        mode, mount it, write the workload's script, say the queue's cache, start the script."""
        script = base64.b64encode(workload.script(MOUNTPOINT).encode()).decode()
        steps = [*self.mode.guest_setup(self.fs, "$dev"), mount_command(self.fs, self.mode, "$dev"),
                 f"echo {script} | base64 -d > /tmp/workload.sh", "echo queue=$(cat /sys/block/$dev/queue/write_cache)",
                 "{ " + START_WORKLOAD + " }"]
        return await_disk_command(serial, "dev") + " && ".join(steps)

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
        if guest is not None:
            guest.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        copy_sparse(source, target)
