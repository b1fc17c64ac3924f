"""Check crash states in checker guests: the checker, made from its settings, and the one way
of checking they choose.

Each way is an object of its own with one method, `check(jobs, progress)`, jobs being
(index, state, collect): `cold` (`batch` states cold-plugged per boot; `batch=1`, one boot
per state, is the reference the fast ways must agree with), `hot` (one guest per worker
stays up and each state is plugged in and out; with `hotbatch`, several states per guest
command, their fsck on the host, in `slots`), `spread` (cold batches over libvirt hosts).
Every way checks a state on its disks with the same `statecheck.StateCheck`.
"""

from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from plugpull.check.cold import ColdPath
from plugpull.check.crew import Crew, default_workers
from plugpull.check.hot import HotPath
from plugpull.check.hotbatch import HotBatch, RunAsks
from plugpull.check.hotguest import KeptGuests
from plugpull.check.spread import SpreadPath
from plugpull.check.statecheck import (CHECK_TIMEOUT, TREE, ScriptCollect, StateCheck, observation_from, observe,
                                       parse_report, split_blob)
from plugpull.check.verdict import Observation
from plugpull.guest.contract.backend import Guest
from plugpull.guest.rig import Rig
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.fs import Filesystem
from plugpull.testbed.stack import Stack

__all__ = ["CHECK_TIMEOUT", "TREE", "Checker", "Plug", "ScriptCollect", "default_workers", "observation_from",
           "observe", "parse_report", "split_blob"]


class Plug(StrEnum):
    HOT = "hot"  # one guest per worker for the whole run; states plugged in and out
    BATCH = "batch"  # `batch` states cold-plugged per boot


class CheckPath(Protocol):
    def check(self, jobs: list[tuple], progress=None) -> list[Observation]: ...


@dataclass
class Checker:
    """The checker's settings, and the way of checking they choose (`path`), made once, at
    the first check. Only `timing` and `fsck_only` change from one check to the next."""

    rig: Rig
    fs: Filesystem
    batch: int = 16
    plug: Plug = Plug.BATCH
    subdir: str = "pp"
    workers: int = 1
    stack: Stack | None = None  # the layers each state's disks are assembled through
    lost: int | None = None  # the stack's member each state is assembled without (--lose-disk)
    check_timeout: float = CHECK_TIMEOUT  # a check that takes longer hung: kernel-crash
    restore: bool = True  # hot: start checker guests from a saved one (`snapshot`) where the backend can
    per_command: int = 8  # hot: states plugged in and checked by one guest command (`hotbatch`); 1: one each
    host_fsck: bool = True  # hot, several per command: fsck on the host, through QEMU (`hostfsck`)
    slots: bool = False  # hot, host fsck: states of one size copied into disks the guest keeps plugged in (`slots`)
    hooks: dict[int, str] = field(default_factory=dict)  # tests only: state index -> guest command run before its check
    kept: KeptGuests | None = None  # hot: guests taken from here and left here clean, not started and closed
    _asks: RunAsks = field(default_factory=RunAsks, init=False, repr=False)
    _path: CheckPath | None = field(default=None, init=False, repr=False)

    def check(self, states: list[CrashState], progress=None, collect: list[str] | None = None) -> list[Observation]:
        """Observations in the order of `states`. `collect` says per state what the oracle
        needs back: "tar", "sums" or "none"."""
        collect = collect or ["tar"] * len(states)
        return self.path.check(list(zip(range(len(states)), states, collect)), progress)

    @property
    def path(self) -> CheckPath:
        if self._path is None:
            self._path = path_for(self)
        return self._path

    @property
    def state_check(self) -> StateCheck:
        return StateCheck(self.fs, self.subdir, self.stack, self.lost, self.check_timeout, self.hooks)

    def check_state(self, m: Guest, devices: list[str], state: CrashState, collect, hook: str = "",
                    prelude: str = "") -> Observation:
        """A state on disks already in guest `m` (`StateCheck.check_state`)."""
        return self.state_check.check_state(m, devices, state, collect, hook, prelude)

    def check_one(self, m: Guest, dev: str, collect: "str | ScriptCollect" = "tar", logdev: str | None = None,
                  hook: str = "", prelude: str = "") -> Observation:
        """One guest command on a disk already in guest `m` (`StateCheck.check_one`)."""
        return self.state_check.check_one(m, dev, collect, logdev, hook, prelude)

    @property
    def timing(self):
        """The `CheckTiming` the hot way's commands and host fsck add to, or None."""
        return self._asks.timing

    @timing.setter
    def timing(self, timing) -> None:
        self._asks.timing = timing

    @contextmanager
    def fsck_only(self, wanted):
        """Within it, the host's fsck reads a state only if `wanted(index, observation)`,
        given the state's observation with fsck not run (`hostfsck.not_run`)."""
        self._asks.fsck_wanted = wanted
        try:
            yield self
        finally:
            self._asks.fsck_wanted = None

    @property
    def reached(self) -> dict | None:
        """After a check spread over hosts: host -> states judged there."""
        return getattr(self._path, "reached", None)


def path_for(checker: Checker) -> CheckPath:
    """The one way of checking the settings choose: over the rig's hosts, hot, or cold."""
    state_check, rig = checker.state_check, checker.rig
    if rig.hosts:
        colds = [ColdPath(rig.on_host(h), state_check, Crew(1), checker.batch) for h in rig.hosts]
        return SpreadPath(rig.hosts, colds, checker.workers, checker.batch)
    crew = Crew(checker.workers)
    if Plug(checker.plug) is Plug.HOT:
        many = (HotBatch(state_check, crew, checker.per_command, checker.host_fsck, checker.slots, checker._asks)
                if checker.per_command > 1 else None)
        return HotPath(rig, state_check, crew, checker.restore, checker.kept, many)
    return ColdPath(rig, state_check, crew, checker.batch)
