"""A hunt's chunk on a cluster worker: names in, judged lines and failing artifacts out.

    hunt_chunk(spec, kernel, several, ids, image_key)   # a task: ChunkResult

The worker records and judges the chunk's workloads as a local hunt does, with the same
code (`hunt.hunter.judge_chunks`), on guests of its own: a recording guest and checker guests
kept in the worker's plugin from one chunk to the next (`KeptHunt`), for as long as the tasks
it gets are of the same hunt settings, and closed when the worker stops. Each failing
workload's directory (its record and states, or what its kernel said while recording) goes
back packed (`bundle.pack_tree`), under the path its line names; nothing else of the chunk
stays on the worker.
"""

import os
import shutil
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from plugpull.check.hotguest import KeptGuests
from plugpull.cluster.bundle import pack_tree
from plugpull.cluster.worker import the_plugin
from plugpull.errors import InfraError
from plugpull.hunt.hunter import HuntGuests, HuntRun, HuntSpec, Place, judge_chunks

CHECKERS = 1  # checker guests per worker, as for a crash task


@dataclass
class ChunkResult:
    """What a worker sends back of one chunk: a journal line per workload, the packed
    directory of each failing one (by the `artifact` its line names), and its figures."""

    lines: list[dict]
    artifacts: dict[str, bytes] = field(default_factory=dict)
    states: int = 0
    distinct: int = 0
    record_s: float = 0.0
    check_s: float = 0.0
    boots: int = 0
    timing: tuple = (0.0, 0, 0.0, 0)  # CheckTiming's many_s, many_states, fsck_s, fsck_states


class KeptHunt:
    """A worker's guests for one hunt's settings: the recording guest, the formatted image its
    disks are copied from (in `root`), and checker guests of their own."""

    def __init__(self, rig, spec: HuntSpec, root: Path):
        self.key = hunt_key(spec)
        root.mkdir(parents=True, exist_ok=True)
        self.checkers = KeptGuests()
        self.guests = HuntGuests(rig, spec, root, self.checkers, workers=CHECKERS)

    def close(self) -> None:
        try:
            self.guests.close()
        finally:
            self.checkers.close()


def hunt_key(spec: HuntSpec) -> tuple:
    """What a kept recording guest and its formatted image depend on."""
    return spec.fs, spec.mode, spec.mib


def kept_hunt(plugin, spec: HuntSpec) -> KeptHunt:
    """The plugin's guests for these settings; those of other settings are closed first."""
    key = hunt_key(spec)
    for other in [k for k in plugin.hunting if k != key]:
        plugin.hunting.pop(other).close()
    if key not in plugin.hunting:
        root = plugin.workdir / "hunts" / str(os.getpid()) / "-".join(map(str, key))
        plugin.hunting[key] = KeptHunt(plugin.rig, spec, root)
    return plugin.hunting[key]


def hunt_chunk(spec: HuntSpec, kernel: str, several: bool, ids: list[str], image_key: str) -> ChunkResult:
    """A task: the workloads `ids` recorded and judged on this worker's kernel (`kernel`, its
    release; `several`: the hunt has more than one, so artifacts are under failing/ID/RELEASE)."""
    plugin = the_plugin()
    if plugin.rig.backend.name != "qemu":
        raise InfraError("a hunt records on QEMU: this worker runs its guests on libvirt (start one without "
                         "--backend libvirt for hunts)")
    if plugin.rig.image.key != image_key:
        raise InfraError(f"worker's guest image {plugin.rig.image.key} is not the coordinator's {image_key}: "
                         "start the worker with the same --kernel")
    with plugin.hunt_lock:  # one recording guest: a chunk at a time
        kept = kept_hunt(plugin, spec)
        chunk = plugin.workdir / "hunts" / str(os.getpid()) / f"chunk-{threading.get_ident()}"
        shutil.rmtree(chunk, ignore_errors=True)
        chunk.mkdir(parents=True)
        try:
            return _judged(kept, replace(spec, budget_s=None), Place(chunk / "out", kernel, several), ids, chunk)
        finally:
            shutil.rmtree(chunk, ignore_errors=True)


def _judged(kept: KeptHunt, spec: HuntSpec, place: Place, ids: list[str], chunk: Path) -> ChunkResult:
    run = HuntRun({}, len(ids), [])
    lines: list[dict] = []
    judge_chunks([ids], spec, kept.guests, chunk / "work", place, run, lines.extend)
    artifacts = {line["artifact"]: pack_tree(place.out / line["artifact"]) for line in lines if line.get("artifact")}
    t = run.timing
    return ChunkResult(lines, artifacts, run.states, run.distinct, run.record_s, run.check_s, run.boots,
                       (t.many_s, t.many_states, t.fsck_s, t.fsck_states))
