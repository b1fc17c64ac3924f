"""A checker guest that stays up while crash states are plugged in and out (the hot way,
`hot`), started from a saved checker guest where the backend keeps them (`snapshot`);
`KeptGuests` keeps such guests up between checks (a cluster worker's, across its tasks)."""

import shutil
import threading

from plugpull.check.console import ConsoleWatch
from plugpull.guest.contract.backend import Guest
from plugpull.guest.contract.config import MachineSpec
from plugpull.guest.rig import Rig
from plugpull.guest.qemu.snapshot import restored_or_booted
from plugpull.paths import make_tempdir


class HotGuest:
    """A checker guest that stays up while states are plugged in and out: started on
    creation, restored or booted (LaunchError if it does not come up), gone with its
    console on `close`."""

    SPEC = MachineSpec(scsi_controller=True)

    def __init__(self, rig: Rig, running: set, restore: bool = True):
        self._running = running
        self.scratch = make_tempdir("checker")
        self.console = ConsoleWatch(self.scratch / "console.log")
        self.machine = None
        self.slots = None  # the disks `hotbatch` copies states into, once it has plugged them in (`slots`)
        try:
            self.machine = self._started(rig, restore)
        except BaseException:
            self.close()
            raise
        self._running.add(self.machine)

    def _started(self, rig: Rig, restore: bool) -> Guest:
        """Restored from the checker guest saved for this rig, when its backend keeps saved
        guests and `restore` is on; booted otherwise."""
        saved = getattr(rig.backend, "saved_state", None) if restore else None
        if saved is None:
            return rig.machine(self.SPEC, name="checker", console_log=self.console.path).__enter__()

        def make(state):
            return rig.backend.machine(self.SPEC, rig.image, rig.accel, name="checker",
                                       console_log=self.console.path, restore=state)

        def for_saving():
            return rig.backend.machine(self.SPEC, rig.image, rig.accel, name="checker-to-save")

        return restored_or_booted(make, saved(self.SPEC, rig.image, rig.accel), for_saving)

    def alive(self) -> bool:
        return self.machine is not None and self.machine.alive()

    def move_to(self, running: set) -> None:
        """Counted among `running` (the guests a checker stops on Ctrl-C) instead of its own."""
        self._running.discard(self.machine)
        self._running = running
        running.add(self.machine)

    def close(self) -> None:
        try:
            if self.machine is not None:
                self.machine.__exit__(None, None, None)
        finally:
            self._running.discard(self.machine)
            shutil.rmtree(self.scratch, ignore_errors=True)


class KeptGuests:
    """Hot checker guests kept up between checks: `take` gives an idle one that still runs (one
    that died is closed and left out) or None; `give` keeps a guest its checker left clean, or
    closes it once `close` has ended the idle ones, as a worker that stops does."""

    def __init__(self):
        self._idle: list[HotGuest] = []
        self._lock = threading.Lock()
        self._closed = False

    def take(self, running: set) -> HotGuest | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                guest = self._idle.pop()
            if guest.alive():
                guest.move_to(running)
                return guest
            guest.close()

    def give(self, guest: HotGuest) -> None:
        with self._lock:
            if not self._closed:
                guest.move_to(set())
                self._idle.append(guest)
                return
        guest.close()

    def close(self) -> None:
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, []
        for guest in idle:
            guest.close()
