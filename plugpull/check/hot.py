"""The hot way of checking: each worker keeps one checker guest up (`hotguest`) and plugs
each state's disks in, checks it and unplugs them, so the boot (about 3 s under TCG) is paid
once per worker. With `many` (`hotbatch`), up to `per_command` states go in one guest command.
"""

import threading
from collections import deque

from plugpull.check.crew import Crew
from plugpull.check.hotbatch import HotBatch
from plugpull.check.hotguest import HotGuest, KeptGuests
from plugpull.check.statecheck import StateCheck, infra, state_disk
from plugpull.check.verdict import Observation
from plugpull.errors import GuestError, InfraError, LaunchError
from plugpull.guest.contract.backend import await_disk_command
from plugpull.guest.rig import Rig
from plugpull.powerloss.crashstate import CrashState

LAUNCHES_TRIED = 2  # failed boots in a row after which a worker's remaining states are infra-errors


class HotPath:
    """States plugged in and out of `crew.workers` long-lived guests on `rig`, restored from a
    saved guest where it can be (`restore`), taken from and left in `kept` where given;
    several per command where `many` can check them."""

    def __init__(self, rig: Rig, state_check: StateCheck, crew: Crew, restore: bool = True,
                 kept: KeptGuests | None = None, many: HotBatch | None = None):
        self.rig, self.state_check, self.crew = rig, state_check, crew
        self.restore, self.kept, self.many = restore, kept, many

    def check(self, jobs: list[tuple], progress=None) -> list[Observation]:
        """Each worker takes the next state as soon as it is done with one, so a slow state
        holds up no other worker."""
        pending, lock, out = deque(jobs), threading.Lock(), {}
        workers = max(1, min(self.crew.workers, len(jobs)))

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
            self._worker(take, done)
        else:
            self.crew.in_parallel([lambda: self._worker(take, done)] * workers)
        return [out[index] for index in range(len(jobs))]

    def _worker(self, take, done) -> None:
        """Check states in one guest until none is left, several per command where they
        can be (`_next_jobs`). A guest that fails on a state, or cannot be trusted after it,
        is replaced for the next one; one that does not boot `LAUNCHES_TRIED` times in a row
        leaves this worker's remaining states infra-errors. The states of a command that
        failed are checked again one at a time, on a fresh guest, so a state's verdict is the
        one-state command's. A state the rig failed on (an infra-error) is judged again on
        the fresh guest, once. With `kept`, the first guest is a kept one if one is up, and
        a guest still trusted at the end is left there."""
        guest, failed_launches, launch_error = self.kept and self.kept.take(self.crew.running), 0, None
        alone, retried, finished = deque(), set(), False
        try:
            while jobs_many := self._next_jobs(take, alone):
                jobs, many = jobs_many
                self.crew.check_going()
                if guest is None and failed_launches < LAUNCHES_TRIED:
                    try:
                        guest, failed_launches = HotGuest(self.rig, self.crew.running, self.restore), 0
                    except LaunchError as e:
                        if self.crew.stopped():
                            raise
                        failed_launches, launch_error = failed_launches + 1, e
                if guest is None:
                    for index, _, _ in jobs:
                        done(index, infra(launch_error))
                    continue
                observed, trusted = (self._many(guest, jobs, alone) if many
                                     else self._alone(guest, jobs[0], alone, retried))
                for (index, _, _), obs in zip(jobs, observed):
                    done(index, obs)
                if not trusted:
                    guest.close()
                    guest = None
            finished = True
        finally:
            if guest is not None and finished and self.kept is not None:
                self.kept.give(guest)
            elif guest is not None:
                guest.close()

    def _many(self, guest: HotGuest, jobs: list[tuple], alone: deque) -> tuple[list, bool]:
        """`many`'s observations of `jobs`; those it left unjudged go to be checked alone."""
        observed, trusted = self.many.check_many(guest, jobs)
        alone.extend(jobs[len(observed):])
        return observed, trusted

    def _alone(self, guest: HotGuest, job: tuple, alone: deque, retried: set) -> tuple[list, bool]:
        """The one job's observation; none, and the job put back to go first, if the rig
        failed on it for the first time."""
        index, state, collect = job
        obs, trusted = self.plug_and_check(guest, index, state, collect, self.state_check.hook(index, retried))
        if obs.infra_error and index not in retried:
            retried.add(index)
            alone.appendleft(job)
            return [], trusted
        return [obs], trusted

    def _next_jobs(self, take, alone: deque) -> tuple[list, bool] | None:
        """The next job to check alone (one to check again, or one `many` cannot check), or
        up to `per_command` jobs for one command; and whether they go in one command. None
        once no job is left."""
        if not alone and self.many is not None:
            together = []
            for job in take(self.many.per_command):
                (together if self.many.fits(job, together) else alone).append(job)
            if together:
                return together, True
        elif not alone:
            alone.extend(take(1))
        return ([alone.popleft()], False) if alone else None

    def plug_and_check(self, guest: HotGuest, index: int, state: CrashState,
                       collect, hook: str = "") -> tuple[Observation, bool]:
        """The state's observation, and whether the guest may check another state. A
        failure while plugging or checking is judged by `StateCheck.failed_on` and not
        checked again; a state left mounted or a disk that would not unplug costs the
        guest, not the verdict."""
        m = guest.machine
        guest.console.set_mark()
        try:
            wait = self.state_check.stack is not None  # a stack is assembled by a command of its own, from named disks
            disks = [m.attach_disk(state_disk(path), wait=wait) for path in state.images]
            names = [disk.device or f"$pp_dev{i}" for i, disk in enumerate(disks)]
            prelude = "".join(await_disk_command(disk.serial, name[1:])
                              for disk, name in zip(disks, names) if not disk.device)
            obs = self.state_check.check_state(m, names, state, collect, hook, prelude)
        except (GuestError, InfraError) as e:
            if self.crew.stopped():
                raise
            return self.state_check.failed_on(e, guest.console), False
        if obs.umount_rc not in (0, None):
            return obs, False  # still mounted: a later state with the same UUID would not mount beside it
        try:
            for disk in reversed(disks):
                m.detach_disk(disk, wait=False)  # the next state's command waits for its own disk
        except (GuestError, InfraError):
            if self.crew.stopped():
                raise
            return obs, False
        return obs, True
