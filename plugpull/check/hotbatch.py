"""Several crash states in one guest command, on a hot checker guest (`HotBatch`, for `hot`).

Under TCG every guest process costs QEMU about 12 ms of CPU (bench/check_options.py), and the
one-state command starts many beside the mount, the oracle's tar and fsck: the channel's own,
its disk lookup by serial, the report's tail/cat/head. Here K states are plugged in at once
and `pp-check --many` checks them in turn with five processes each (mount, tar, umount, fsck,
dmesg), then returns every state's key=value lines and evidence files in one answer. On the
QEMU backend the fsck runs on the host instead, natively (`hostfsck`).
The host rebuilds from them the very report `pp-check` would have printed (the fsck output's
last 40 lines, the kernel log's first 200), so a state's observation does not depend on the
path that checked it.
"""

import logging
import os
import shlex
import time
from dataclasses import dataclass

from plugpull.check import hostfsck
from plugpull.check.crew import Crew
from plugpull.check.fsckchoice import CheckTiming
from plugpull.check.slots import Slots, lun
from plugpull.check.statecheck import StateCheck, observe, state_disk
from plugpull.errors import GuestError, InfraError
from plugpull.guest.contract.backend import AttachedDisk

PARTS = ("keys", "fsck", "mount", "dmesg", "blob")  # files per state, in pp-check --many's order
FSCK_LINES, DMESG_LINES = 40, 200  # as the one-state report (statecheck.REPORT_TAIL) cuts them
COLLECTS = ("tar", "sums", "tree", "none")
DATA_MARK = b"\n---data\n"
log = logging.getLogger(__name__)


def many_command(mount_type: str, subdir: str, collect: str, luns: list[int], fsck: bool = True) -> str:
    """The guest command that checks the states at `luns`; without `fsck`, the host runs it."""
    if collect not in COLLECTS:
        raise ValueError(f"pp-check --many collects {', '.join(COLLECTS)}, not {collect!r}")
    words = ["pp-check", "--many"] + ([] if fsck else ["--no-fsck"])
    words += [mount_type, subdir, collect] + [str(lun) for lun in luns]
    return " ".join(shlex.quote(w) for w in words)


def _lines(data: bytes) -> list[bytes]:
    """Lines as tail and head count them: a last line without its newline is a line."""
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def split_answer(stdout: bytes, count: int) -> list[dict[str, bytes]]:
    """Per state, its files by part name, from `wc -c` of them all, `---data` and their bytes."""
    head, found, data = stdout.partition(DATA_MARK)
    text = head.decode(errors="replace")
    if "disk_missing=" in text:
        raise GuestError(f"a state's disk did not show up in the guest ({text.strip()})")
    if not found:
        raise GuestError(f"pp-check --many gave no data: {text[-300:]!r}")
    sizes = [int(line.split()[0]) for line in text.splitlines()
             if line.strip() and not line.strip().endswith(" total")]
    if len(sizes) != count * len(PARTS) or sum(sizes) != len(data):
        raise GuestError(f"pp-check --many's answer is cut short: {len(sizes)} files, "
                         f"{len(data)} of {sum(sizes)} bytes, for {count} states")
    files, at = [], 0
    for size in sizes:
        files.append(data[at:at + size])
        at += size
    return [dict(zip(PARTS, files[i:i + len(PARTS)])) for i in range(0, len(files), len(PARTS))]


def report_of(parts: dict[str, bytes]) -> tuple[str, bytes]:
    """The report one `pp-check` and statecheck.REPORT_TAIL print for this state, and the file
    the oracle gets back."""
    text = (parts["keys"] + b"---fsck\n" + b"".join(_lines(parts["fsck"])[-FSCK_LINES:])
            + b"---mount\n" + parts["mount"] + b"---dmesg\n" + b"".join(_lines(parts["dmesg"])[:DMESG_LINES]))
    return text.decode(errors="replace"), parts["blob"]


def lun_of(disk: AttachedDisk) -> int:
    """The LUN a hot-plugged disk sits at."""
    return lun(disk.serial)


@dataclass
class RunAsks:
    """What a checker's caller may change from one run to the next: the timing that the
    commands and the host's fsck add to (`CheckTiming`), and `fsck_wanted`, (index,
    observation without fsck) -> whether the host's fsck reads the state (None: every state)."""

    timing: CheckTiming | None = None
    fsck_wanted: object = None


class HotBatch:
    """Up to `per_command` states checked by one `pp-check --many` on a hot guest. With
    `host_fsck`, fsck runs on the host where the guest's QEMU can export a state (`hostfsck`);
    with `slots` too, states of one size are copied into disks the guest keeps plugged in
    (`slots`)."""

    def __init__(self, state_check: StateCheck, crew: Crew, per_command: int, host_fsck: bool = True,
                 slots: bool = False, asks: RunAsks | None = None):
        self.state_check, self.crew, self.per_command = state_check, crew, per_command
        self.host_fsck = host_fsck and hostfsck.available(state_check.fs.mount_type)
        self.slots, self.asks = slots, asks or RunAsks()

    def fits(self, job: tuple, many: list) -> bool:
        """Whether `job` can go in one command with `many`: not a stack, a log disk, a check
        script or a test hook, and the same collect."""
        index, state, collect = job
        return (self.state_check.stack is None and len(state.images) == 1 and not self.state_check.hooks.get(index)
                and collect in COLLECTS and (not many or collect == many[0][2]))

    def check_many(self, guest, jobs: list[tuple]) -> tuple[list, bool]:
        """Observations of the first of `jobs` (all of them, unless a state stayed mounted:
        those after it are left unjudged), and whether the guest may check more. A failure
        while plugging or checking leaves them all unjudged: they go to a fresh guest."""
        m, started = guest.machine, time.monotonic()
        on_host = self.host_fsck and getattr(m, "exports", None) is not None
        try:
            slots = self._slots_for(guest, jobs) if on_host else None
            disks, luns, forget = self._plugged(m, slots, jobs)
            answer = m.run(forget + many_command(self.state_check.fs.mount_type, self.state_check.subdir, jobs[0][2],
                                                 luns, fsck=not on_host), timeout=self.state_check.check_timeout)
            reports = split_answer(answer.stdout, len(jobs))
        except (GuestError, InfraError) as e:
            if self.crew.stopped():
                raise
            log.debug("%d states go to a fresh guest, one at a time: %s", len(jobs), str(e).splitlines()[0])
            return [], False
        fsck = (lambda k, parts: self._fsck_slot(slots.paths[k], parts)) if slots is not None else (
            lambda k, parts: self._fsck_on_host(m, disks[k], parts))
        observed, trusted, fsck_s = self._observed(jobs, reports, fsck if on_host else None)
        if not trusted or (disks and not self._unplugged(m, disks)):
            return observed, False
        if self.asks.timing is not None:
            fscked = sum(o.fsck_rc is not None for o in observed) if on_host else 0
            self.asks.timing.add(time.monotonic() - started, len(observed), fsck_s, fscked)
            log.debug("%d states in %.3f s, %d host fsck in %.3f s", len(observed), time.monotonic() - started,
                      fscked, fsck_s)
        return observed, True

    def _plugged(self, m, slots: Slots | None, jobs: list[tuple]) -> tuple[list, list[int], str]:
        """The states in the guest: the disks plugged in for them (none in slots), their
        LUNs, and the shell that makes the guest forget what it cached of the slots."""
        if slots is not None:
            return [], slots.fill([state.images[0] for _, state, _ in jobs]), slots.forget_command(len(jobs))
        disks = [m.attach_disk(state_disk(state.images[0]), wait=False) for _, state, _ in jobs]
        return disks, [lun_of(disk) for disk in disks], ""

    def _observed(self, jobs: list[tuple], reports: list, fsck) -> tuple[list, bool, float]:
        """The observations of the states in turn, with `fsck(k, parts)` on the host where
        given; whether the guest may go on; and the seconds the host's fsck took. A state
        left mounted or a host fsck that fails ends them, leaving the rest unjudged."""
        observed, fsck_s = [], 0.0
        for k, ((index, _, collect), parts) in enumerate(zip(jobs, reports)):
            try:
                if fsck and self._skips_fsck(index, parts, collect):
                    parts = hostfsck.not_run(parts)
                elif fsck:
                    t0 = time.monotonic()
                    parts = fsck(k, parts)
                    fsck_s += time.monotonic() - t0
            except (GuestError, InfraError) as e:
                if self.crew.stopped():
                    raise
                log.debug("states from %d on go to the guest's own fsck: %s", k, str(e).splitlines()[0])
                return observed, False, fsck_s
            observed.append(observe(*report_of(parts), collect))
            if observed[-1].umount_rc not in (0, None):
                return observed, False, fsck_s  # still mounted: see HotPath.plug_and_check
        return observed, True, fsck_s

    def _unplugged(self, m, disks: list[AttachedDisk]) -> bool:
        """Whether the disks came out; False (or, once stopped, the error) if not."""
        try:
            if hasattr(m, "detach_disks"):
                m.detach_disks(disks)  # at once: one unplug costs the guest ~60 ms under TCG
            else:
                for disk in reversed(disks):
                    m.detach_disk(disk, wait=False)
        except (GuestError, InfraError):
            if self.crew.stopped():
                raise
            return False
        return True

    def _slots_for(self, guest, jobs: list[tuple]) -> Slots | None:
        """The guest's slots for these states (`slots`), plugged in at its first check of
        states all of one size, or None where the states go in plugged: `slots` off, or
        states that do not fit them (`Slots.fits`)."""
        if not self.slots:
            return None
        images = [state.images[0] for _, state, _ in jobs]
        if guest.slots is None:
            sizes = {os.path.getsize(image) for image in images}
            if len(sizes) > 1:
                return None  # no slots of a size that only some states have
            guest.slots = Slots(guest.machine, guest.scratch, sizes.pop(), max(self.per_command, len(images)))
            return guest.slots
        return guest.slots if guest.slots.fits(images) else None

    def _fsck_slot(self, path, parts: dict[str, bytes]) -> dict[str, bytes]:
        """The state's files with the host's fsck of its slot, as the guest left it."""
        rc, output = hostfsck.run(self.state_check.fs.mount_type, path, self.state_check.check_timeout)
        return hostfsck.with_fsck(parts, rc, output)

    def _skips_fsck(self, index: int, parts: dict[str, bytes], collect: str) -> bool:
        """Whether the caller's `fsck_wanted` leaves this state unread by fsck."""
        wanted = self.asks.fsck_wanted
        return wanted is not None and not wanted(index, observe(*report_of(hostfsck.not_run(parts)), collect))

    def _fsck_on_host(self, m, disk: AttachedDisk, parts: dict[str, bytes]) -> dict[str, bytes]:
        """The state's files with the host's fsck of it (`hostfsck`). A QEMU that cannot export
        a disk (no FUSE here) turns the host's fsck off for the rest of the run."""
        try:
            path = m.exports.add(disk.handle)
        except GuestError as e:
            if self.host_fsck and m.alive():
                log.warning("fsck runs in the checker guest: QEMU cannot export a state to the host (%s)",
                            str(e).splitlines()[0])
                self.host_fsck = False
            raise
        try:
            rc, output = hostfsck.run(self.state_check.fs.mount_type, path, self.state_check.check_timeout)
        finally:
            m.exports.remove(disk.handle)
        return hostfsck.with_fsck(parts, rc, output)
