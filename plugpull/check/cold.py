"""The cold way of checking: each checker guest boots with its states' disks already in it
(`batch` of them), checks them in turn and is gone. `batch=1`, one boot per state, is the
reference the faster ways must agree with."""

import shutil
import threading

from plugpull.check.console import ConsoleWatch
from plugpull.check.crew import Crew, tick
from plugpull.check.statecheck import StateCheck, infra, state_disk
from plugpull.check.verdict import Observation
from plugpull.errors import GuestError, InfraError, LaunchError
from plugpull.guest.contract.backend import Guest
from plugpull.guest.contract.config import MachineSpec
from plugpull.guest.rig import Rig
from plugpull.paths import make_tempdir


class ColdPath:
    """States checked `batch` per boot on `rig`, the chunks shared out among `crew`'s workers."""

    def __init__(self, rig: Rig, state_check: StateCheck, crew: Crew, batch: int):
        self.rig, self.state_check, self.crew, self.batch = rig, state_check, crew, batch

    def check(self, jobs: list[tuple], progress=None) -> list[Observation]:
        chunks = [jobs[i:i + self.batch] for i in range(0, len(jobs), self.batch)]
        if self.crew.workers <= 1 or len(chunks) <= 1:
            return [obs for chunk in chunks for obs in self.check_chunk(chunk, progress)]
        lock = threading.Lock()

        def locked_tick():
            with lock:
                tick(progress)

        done = self.crew.in_parallel([lambda chunk=chunk: self.check_chunk(chunk, locked_tick) for chunk in chunks])
        return [obs for chunk_obs in done for obs in chunk_obs]

    def check_chunk(self, chunk: list[tuple], progress, retried: frozenset = frozenset()) -> list[Observation]:
        """Check a chunk of (index, state, collect) in one guest. If the guest fails on a
        state, its console judges that state (`StateCheck.failed_on`) and the rest go to a
        fresh guest; a state the rig failed on (an infra-error) is judged again there, once.
        If the guest never came up, all of them are infra-errors. After a failed unmount the
        rest go to a fresh guest too."""
        images = [p for _, state, _ in chunk for p in state.images]
        spec = MachineSpec(disks=tuple(state_disk(p) for p in images))
        out: list[Observation] = []
        booted = False
        scratch = make_tempdir("checker")
        console = ConsoleWatch(scratch / "console.log")
        machine = self.rig.machine(spec, name="checker", console_log=console.path)
        self.crew.running.add(machine)
        try:
            with machine as m:
                devices = _devices(m, len(images))
                booted = True
                lun = 0
                for index, state, collect in chunk:
                    self.crew.check_going()
                    console.set_mark()
                    names = [devices[lun + i] for i in range(len(state.images))]
                    obs = self.state_check.check_state(m, names, state, collect, self.state_check.hook(index, retried))
                    out.append(obs)
                    lun += len(state.images)
                    tick(progress)
                    if obs.umount_rc not in (0, None):
                        break  # still mounted: the next state, with the same UUID, would not mount beside it
        except (GuestError, LaunchError, InfraError) as e:
            if self.crew.stopped():
                raise
            casualties = [self.state_check.failed_on(e, console)] if booted else [infra(e)] * (len(chunk) - len(out))
            if booted and casualties[0].infra_error and chunk[len(out)][0] not in retried:
                retried, casualties = retried | {chunk[len(out)][0]}, []
            for failed in casualties:
                out.append(failed)
                tick(progress)
        finally:
            self.crew.running.discard(machine)
            shutil.rmtree(scratch, ignore_errors=True)
        if len(out) < len(chunk):
            out += self.check_chunk(chunk[len(out):], progress, retried)
        return out


def _devices(m: Guest, count: int) -> dict[int, str]:
    """LUN -> kernel name, through the guest's /dev/pp-diskN links (serial plugpullN)."""
    names = m.run("cd /dev && for l in pp-disk*; do echo ${l#pp-disk} $(readlink $l); done").check().text
    devices = {int(n): dev for n, _, dev in (line.partition(" ") for line in names.splitlines()) if dev}
    if sorted(devices) != list(range(count)):
        raise InfraError(f"checker guest sees state disks {sorted(devices)}, expected {count}")
    return devices
