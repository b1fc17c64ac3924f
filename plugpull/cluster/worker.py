"""The worker's side: a Dask worker plugin holding the rig and the record cache, and the
task that checks a few named states on the worker's own checker guests.

    plugin = PlugpullPlugin(workdir, rig)    # `plugpull worker` installs it
    check_named(bundle, names, settings, image_key)  # a task: [(index, (Observation, digest))]

The states are built here, from the record the bundle unpacked into `workdir/records/DIGEST`
(once per worker, its digest checked first), checked by the same `Checker` as a local run
(its retries and its verdicts on a guest that dies are the local ones), hashed for the
artifacts and removed. Only observations and digests go back. The worker's hot checker guest
stays up from one task to the next (`KeptGuests`): a task takes it if it still runs, starts
one otherwise, and leaves it if it left it clean; the plugin closes it when the worker stops.
"""

import os
import shutil
import threading
from dataclasses import fields
from pathlib import Path

from distributed import WorkerPlugin, get_worker

from plugpull.check.checker import Checker
from plugpull.check.hotguest import KeptGuests
from plugpull.cluster.bundle import install
from plugpull.cluster.crash_task import StateName
from plugpull.crash.judge import build_state, disk_plans, plan_key
from plugpull.crash.record import Record
from plugpull.errors import InfraError
from plugpull.powerloss.writelog import iter_entries

PLUGIN = "plugpull"
NOT_SHIPPED = {"rig", "workers", "hooks", "kept"}  # the worker's own rig and guests; tests' hooks stay home


def image_resource(key: str) -> str:
    """The Dask resource a worker holds one of for its guest image (`plugpull worker`): a hunt's
    chunk of a kernel asks for that kernel's, so it runs on a worker of that kernel, one at a time."""
    return f"plugpull-image-{key}"


def checker_settings(checker: Checker) -> dict:
    """What a worker's Checker copies of the coordinator's: everything but the rig."""
    return {f.name: getattr(checker, f.name) for f in fields(checker) if f.init and f.name not in NOT_SHIPPED}


class PlugpullPlugin(WorkerPlugin):
    """The worker's work dir (records, states), its rig, each record's log entries, and its
    checker guests kept between tasks, with a hunt's recording guest (closed in `teardown`,
    when the worker stops)."""

    name = PLUGIN

    def __init__(self, workdir: Path, rig):
        self.workdir = Path(workdir)
        self.rig = rig
        self._lock = threading.Lock()
        self._entries: dict[str, list] = {}
        self.guests = KeptGuests()
        self.hunting: dict = {}  # a hunt's recording guest, kept across its chunks (`hunt_task`)
        self.hunt_lock = threading.Lock()

    def __getstate__(self) -> dict:  # sent to a worker (`Client.register_plugin`): no lock, no entries
        return {"workdir": self.workdir, "rig": self.rig}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["workdir"], state["rig"])

    def teardown(self, worker=None) -> None:
        for kept in self.hunting.values():
            kept.close()
        self.guests.close()

    def record(self, digest: str, data: bytes) -> tuple[Record, list[list]]:
        """The cached record of `digest` (installed from `data` the first time) and each of
        its disks' log entries."""
        with self._lock:
            rec = Record.load(install(self.workdir, digest, data))
            if digest not in self._entries:
                self._entries[digest] = [list(iter_entries(log)) for log in rec.logs]
            return rec, self._entries[digest]


def the_plugin() -> PlugpullPlugin:
    plugin = get_worker().plugins.get(PLUGIN)
    if plugin is None:
        raise InfraError("this Dask worker has no plugpull plugin: start it with `plugpull worker`")
    return plugin


def check_named(bundle: bytes, names: list[StateName], settings: dict, image_key: str) -> list[tuple]:
    """A task: build the named states from the cached record, check them, hash them."""
    plugin = the_plugin()
    if plugin.rig.image.key != image_key:
        raise InfraError(f"worker's guest image {plugin.rig.image.key} is not the coordinator's {image_key}: "
                         "start the worker with the same --kernel")
    rec, entries = plugin.record(names[0].record, bundle)
    scratch = plugin.workdir / "states" / f"{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        states = [build_state(rec, _pieces(entries, name), scratch / f"state-{name.index:05d}.img")
                  for name in names]
        checker = Checker(plugin.rig, workers=1, kept=plugin.guests, **settings)
        observations = checker.check(states, collect=[name.collect for name in names])
        return [(name.index, (obs, state.digest())) for name, obs, state in zip(names, observations, states)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _pieces(entries: list[list], name: StateName) -> tuple:
    """The state's pieces on each disk, planned here; refused if they are not the plan the
    coordinator named (another record, another model table)."""
    pieces = disk_plans(entries, name.job, name.seed)
    if plan_key(*pieces).hex() != name.key:
        raise InfraError(f"state {name.index} ({name.model} cut {name.cuts}): the worker plans other pieces "
                         "than the coordinator")
    return pieces
