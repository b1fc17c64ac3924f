"""Several crash states in one guest command, on a hot checker guest (`Checker.per_command`).

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
import threading
import time
from collections import deque
from contextlib import contextmanager

from plugpull.check import hostfsck
from plugpull.check.fsckchoice import CheckTiming
from plugpull.check.slots import Slots, lun
from plugpull.errors import GuestError, InfraError
from plugpull.guest.contract.backend import AttachedDisk
from plugpull.guest.contract.config import Bus, DiskSpec

PARTS = ("keys", "fsck", "mount", "dmesg", "blob")  # files per state, in pp-check --many's order
FSCK_LINES, DMESG_LINES = 40, 200  # as the one-state report (checker.REPORT_TAIL) cuts them
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
    """The report one `pp-check` and checker.REPORT_TAIL print for this state, and the file
    the oracle gets back."""
    text = (parts["keys"] + b"---fsck\n" + b"".join(_lines(parts["fsck"])[-FSCK_LINES:])
            + b"---mount\n" + parts["mount"] + b"---dmesg\n" + b"".join(_lines(parts["dmesg"])[:DMESG_LINES]))
    return text.decode(errors="replace"), parts["blob"]


def lun_of(disk: AttachedDisk) -> int:
    """The LUN a hot-plugged disk sits at."""
    return lun(disk.serial)


def state_disk(path) -> DiskSpec:
    """A state as the checker sees it: its writes go to a throwaway overlay, its file stays as it was."""
    return DiskSpec(path, Bus.SCSI, True, host_flush=False, snapshot=True)


class ManyStates:
    """The hot path of `checker.Checker`: its states shared out among the workers, several
    per guest command. `observe(text, blob, collect)` makes an observation of a report.

    `timing`, when given a CheckTiming, adds up what the commands and the host's fsck cost;
    within `fsck_only`, the host's fsck reads only the states it is asked to."""

    timing: CheckTiming | None = None
    _fsck_wanted = None  # (index, observation without fsck) -> bool; None: every state

    @contextmanager
    def fsck_only(self, wanted):
        """Within it, the host's fsck reads a state only if `wanted(index, observation)`,
        given the state's observation with fsck not run (`hostfsck.not_run`)."""
        self._fsck_wanted = wanted
        try:
            yield self
        finally:
            self._fsck_wanted = None

    def _check_hot(self, jobs: list[tuple], progress) -> list:
        """Each worker keeps one guest up and takes the next state as soon as it is done
        with one, so a slow state holds up no other worker."""
        pending, lock, out = deque(jobs), threading.Lock(), {}
        workers = max(1, min(self.workers, len(jobs)))

        def take(most: int) -> list:
            """Up to `most` jobs, and no more than a fair share of those left."""
            with lock:
                share = min(most, -(-len(pending) // workers))
                return [pending.popleft() for _ in range(share)]

        def done(index: int, obs) -> None:
            with lock:
                out[index] = obs
                if progress:
                    progress()

        if workers == 1:
            self._hot_worker(take, done)
        else:
            self._in_parallel([lambda: self._hot_worker(take, done)] * workers)
        return [out[index] for index in range(len(jobs))]

    def _next_jobs(self, take, alone: deque) -> tuple[list, bool]:
        """The next job to check alone (one to check again, or one `pp-check --many` cannot
        check: a stack, a log disk, a check script, a test hook), or up to `per_command` jobs
        for one command; and whether they go in one command."""
        if not alone and self.per_command > 1:
            many = []
            for job in take(self.per_command):
                (many if self._fits_many(job, many) else alone).append(job)
            if many:
                return many, True
        elif not alone:
            alone.extend(take(1))
        return ([alone.popleft()], False) if alone else ([], False)

    def _fits_many(self, job: tuple, many: list) -> bool:
        index, state, collect = job
        return (self.stack is None and len(state.images) == 1 and not self.hooks.get(index)
                and collect in COLLECTS and (not many or collect == many[0][2]))

    def _check_many(self, guest, jobs: list[tuple]) -> tuple[list, bool]:
        """Observations of the first of `jobs` (all of them, unless a state stayed mounted:
        those after it are left unjudged), and whether the guest may check more. A failure
        while plugging or checking leaves them all unjudged: they go to a fresh guest."""
        m = guest.machine
        on_host = self.host_fsck and getattr(m, "exports", None) is not None and hostfsck.available(self.fs.mount_type)
        disks, slots, started, fsck_s = [], None, time.monotonic(), 0.0
        try:
            slots = self._slots_for(guest, jobs) if on_host else None
            if slots is not None:
                luns, forget = slots.fill([state.images[0] for _, state, _ in jobs]), slots.forget_command(len(jobs))
            else:
                disks = [m.attach_disk(state_disk(state.images[0]), wait=False) for _, state, _ in jobs]
                luns, forget = [lun_of(disk) for disk in disks], ""
            answer = m.run(forget + many_command(self.fs.mount_type, self.subdir, jobs[0][2], luns, fsck=not on_host),
                           timeout=self.check_timeout)
            reports = split_answer(answer.stdout, len(jobs))
        except (GuestError, InfraError) as e:
            if self._stop.is_set():
                raise
            log.debug("%d states go to a fresh guest, one at a time: %s", len(jobs), str(e).splitlines()[0])
            return [], False
        observed = []
        for k, ((index, _, collect), parts) in enumerate(zip(jobs, reports)):
            try:
                if on_host and self._skips_fsck(index, parts, collect):
                    parts = hostfsck.not_run(parts)
                elif on_host:
                    t0 = time.monotonic()
                    parts = (self._fsck_slot(slots.paths[k], parts) if slots is not None
                             else self._fsck_on_host(m, disks[k], parts))
                    fsck_s += time.monotonic() - t0
            except (GuestError, InfraError) as e:
                if self._stop.is_set():
                    raise
                log.debug("states from %d on go to the guest's own fsck: %s", k, str(e).splitlines()[0])
                return observed, False
            observed.append(self.observe(*report_of(parts), collect))
            if observed[-1].umount_rc not in (0, None):
                return observed, False  # still mounted: see _plug_and_check
        if disks and not self._unplugged(m, disks):
            return observed, False
        if self.timing is not None:
            fscked = sum(o.fsck_rc is not None for o in observed) if on_host else 0
            self.timing.add(time.monotonic() - started, len(observed), fsck_s, fscked)
            log.debug("%d states in %.3f s, %d host fsck in %.3f s", len(observed), time.monotonic() - started,
                      fscked, fsck_s)
        return observed, True

    def _unplugged(self, m, disks: list[AttachedDisk]) -> bool:
        """Whether the disks came out; False (or, once stopped, the error) if not."""
        try:
            if hasattr(m, "detach_disks"):
                m.detach_disks(disks)  # at once: one unplug costs the guest ~60 ms under TCG
            else:
                for disk in reversed(disks):
                    m.detach_disk(disk, wait=False)
        except (GuestError, InfraError):
            if self._stop.is_set():
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
        rc, output = hostfsck.run(self.fs.mount_type, path, self.check_timeout)
        return hostfsck.with_fsck(parts, rc, output)

    def _skips_fsck(self, index: int, parts: dict[str, bytes], collect: str) -> bool:
        """Whether `fsck_only` leaves this state unread by fsck."""
        wanted = self._fsck_wanted
        return wanted is not None and not wanted(index, self.observe(*report_of(hostfsck.not_run(parts)), collect))

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
            rc, output = hostfsck.run(self.fs.mount_type, path, self.check_timeout)
        finally:
            m.exports.remove(disk.handle)
        return hostfsck.with_fsck(parts, rc, output)
