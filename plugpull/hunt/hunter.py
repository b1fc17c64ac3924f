"""A hunt: generated workloads, a chunk at a time, recorded in one guest and judged together.

    result = hunt(HuntSpec(seq=1, fs="ext4"), space, [rig], Path("results/hunt-ext4"))

Per chunk, each workload is recorded on its own copy of one formatted image (`record`), the
states around its persistence points are built (`cuts.point_cuts`), every state of the chunk is checked
in one pass of the checker guests (`judge_many`) and judged by the workload's model oracle,
and each workload's line goes to the journal. A workload with a state that is not clean keeps
its record and those states under `failing/ID/`, ready for `replay` and `minimise`. With a
budget, no chunk starts once it is spent.

Given several rigs (one per kernel), the hunt runs kernel by kernel: every workload on the
first kernel, with its own recording and checker guests, then every workload on the next.
A failing workload's artifacts are then under `failing/ID/RELEASE/`.

On a cluster (`cluster.hunt_coordinator`), the hunt opens and closes here alike (`open_hunt`,
`close_run`), and each worker runs its chunks through the same `judge_chunks` on guests it
keeps (`HuntGuests`, `cluster.hunt_task`).
"""

import logging
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.check.checker import Checker, Plug, default_workers
from plugpull.check.fsckchoice import CheckTiming, FsckChoice
from plugpull.check.hotguest import KeptGuests
from plugpull.crash.judge import Batch, StateJob, judge_many, remove_states
from plugpull.crash.record import Record
from plugpull.crash.artifacts import state_results
from plugpull.errors import GuestError, InfraError, LaunchError, UsageError
from plugpull.generate.space import Space
from plugpull.generate.workload import GeneratedWorkload, generated_workload
from plugpull.guest.rig import Rig
from plugpull.hunt.journal import JOURNAL, REJECTED, TABLE, Journal, check_out, set_aside
from plugpull.hunt.lock import hold
from plugpull.hunt.record import Failed, Recorder, formatted
from plugpull.hunt.summary import workload_line, write_summary
from plugpull.workdirs import make_workdir
from plugpull.powerloss.cuts import POINT_CUTS, point_cuts
from plugpull.powerloss.writelog import iter_entries
from plugpull.progress import Progress
from plugpull.testbed.fs import filesystem, mode as mode_named

log = logging.getLogger(__name__)

DISK_MIB = {"xfs": 300, "btrfs": 128}  # mkfs's smallest; 64 MiB for the rest
INFRA_IN_A_ROW = 3  # workloads the harness failed on in a row, after which the hunt stops (exit 3)
# Each cut taken as a prefix, and under `reorder` (any subset of the open epoch persists) and
# `drop-unflushed` (none of it does). Cuts whose states persist the same pieces are one state,
# checked once (`plan_states`).
MODELS = ("prefix", "reorder", "drop-unflushed")


@dataclass(frozen=True)
class HuntSpec:
    seq: int
    fs: str = "ext4"
    mode: str = "barrier"
    ops: tuple[str, ...] = ()
    sample: int | None = None
    seed: int = 1
    disk_mib: int | None = None
    budget_s: float | None = None
    chunk: int = 16
    overlap: bool = True  # record the next chunk while one is judged (False: one after the other)
    fsck: FsckChoice = FsckChoice()  # which states the host's fsck reads (`fsckchoice`)
    setup: str = "synced"  # or unsynced: the setup's files in the same transaction as the operations; or links, ...
    table: int = TABLE  # 1: only the first table's operations (a hunt started before the later ones)
    slots: bool = True  # states copied into disks the checker guests keep plugged in (`check.slots`)
    keep_disk: bool = True  # the recording guest's disk kept plugged in from one workload to the next (`record`)
    shape: str = ""  # the shape whose workloads it takes (generate/shapes.py; "": the whole space of `seq`)

    @property
    def models(self) -> tuple[str, ...]:
        """A lying disk is a barrier recording whose states ignore its flushes."""
        return tuple(f"{m}+lying" for m in MODELS) if mode_named(self.mode).lying else MODELS

    @property
    def recording_mode(self):
        return mode_named("barrier") if mode_named(self.mode).lying else mode_named(self.mode)

    @property
    def mib(self) -> int:
        return self.disk_mib or DISK_MIB.get(filesystem(self.fs).mount_type, 64)

    def settings(self, *kernels: str) -> dict:
        """What a resumed hunt must share with the one it goes on from: with one kernel its
        release as `kernel` (as before hunts took several), with several their `kernels`."""
        on = {"kernel": kernels[0]} if len(kernels) == 1 else {"kernels": list(kernels)}
        fsck = {} if self.fsck.always else {"fsck": self.fsck.text}  # hunts from before the choice resume
        fsck |= {"shape": self.shape} if self.shape else {}  # and hunts from before shapes
        return {"seq": self.seq, "ops": list(self.ops), "sample": self.sample, "seed": self.seed, "fs": self.fs,
                "mode": self.mode, "disk_mib": self.mib, **on, "models": list(self.models), "cuts": POINT_CUTS, **fsck,
                "setup": self.setup, "table": self.table}


@dataclass(frozen=True)
class Place:
    """Where one kernel's judged workloads go: the hunt's directory `out`, the kernel's
    release, and whether the hunt has several kernels (then a failing workload's artifacts are
    under failing/ID/RELEASE/, else failing/ID/)."""

    out: Path
    kernel: str = ""
    several: bool = False

    def failing(self, ident: str) -> Path:
        where = self.out / "failing" / ident
        return where / self.kernel if self.several else where


@dataclass
class HuntRun:
    settings: dict
    total: int  # workloads in the hunt
    lines: list[dict]  # every workload finished, this run's and earlier runs'
    new: int = 0  # workloads finished by this run
    states: int = 0  # this run's
    distinct: int = 0
    record_s: float = 0.0
    check_s: float = 0.0  # recording and checking overlap: their sum may pass wall_s
    wall_s: float = 0.0
    boots: int = 0  # recording guests started
    infra: list = field(default_factory=list)  # (id, why): workloads the harness failed on
    streak: int = 0  # guests failed in a row
    stopped_by_budget: bool = False
    timing: CheckTiming = field(default_factory=CheckTiming)  # the checker's commands and their host fsck


def workload_ids(space: Space, sample: int | None, seed: int) -> list[str]:
    if sample is not None:
        return [space.workload(i).ident for i in space.sample(sample, seed)]
    return [w.ident for w in space.workloads()]


def spent(spec: HuntSpec, started: float) -> bool:
    return spec.budget_s is not None and time.monotonic() - started >= spec.budget_s


def hunt(spec: HuntSpec, space: Space, rigs, out: Path) -> HuntRun:
    """Every workload of the hunt judged on each rig's kernel, kernel by kernel (`rigs`: one
    Rig per kernel, their releases distinct); the budget is the whole run's."""
    kernels = [rig.image.kernel_release for rig in rigs]
    with open_hunt(spec, space, kernels, out) as (journal, ids, run):
        started = time.monotonic()
        for rig, kernel in zip(rigs, kernels):
            todo = [i for i in ids if (i, kernel) not in journal.done]
            run.stopped_by_budget |= bool(todo) and spent(spec, started)
            if todo and not run.stopped_by_budget:
                on = f" on {kernel}" if len(kernels) > 1 else ""
                log.info(f"hunting{on}: {len(todo)} of {len(ids)} workloads to go ({len(ids) - len(todo)} done before)")
                _hunt_on(rig, todo, spec, Place(out, kernel, len(kernels) > 1), run, journal, started)
        return close_run(run, journal, ids, kernels, started)


@contextmanager
def open_hunt(spec: HuntSpec, space: Space, kernels: list[str], out: Path):
    """The hunt in `out` checked against these settings (a new one, or one to go on with) and
    held as its one writer for the block, its lines that are not whole set aside: yields its
    journal, its workload ids and a run that has judged none yet. A local hunt and a hunt on a
    cluster start here alike."""
    if twice := next((k for k in kernels if kernels.count(k) > 1), None):
        raise UsageError(f"--kernel: {twice} is given twice: name each kernel once")
    settings = spec.settings(*kernels)
    check_out(out, settings)
    ids = workload_ids(space, spec.sample, spec.seed)
    with hold(out):
        if moved := set_aside(out):
            log.warning(f"{out / JOURNAL}: {moved} line(s) not whole moved to {out / REJECTED}; their workloads "
                        "are judged again")
        journal, run = Journal(out, settings), HuntRun(settings, len(ids) * len(kernels), [])
        try:
            yield journal, ids, run
        except KeyboardInterrupt:  # summary.txt says what the journal holds, not an earlier run's end
            run.lines = done_lines(journal, ids, kernels)
            write_summary(run, out)
            raise


def done_lines(journal: Journal, ids: list[str], kernels: list[str]) -> list[dict]:
    return [journal.done[(i, k)] for k in kernels for i in ids if (i, k) in journal.done]


def close_run(run: HuntRun, journal: Journal, ids: list[str], kernels: list[str], started: float) -> HuntRun:
    run.wall_s = time.monotonic() - started
    run.lines = done_lines(journal, ids, kernels)
    return run


class HuntGuests:
    """A kernel's recording guest and checker guests for one hunt's settings, kept from one
    chunk to the next: by a local hunt for one kernel, by a cluster worker across tasks.
    `work` holds the formatted image every workload's disk is copied from; `kept` the checker
    guests (closed by its owner)."""

    def __init__(self, rig: Rig, spec: HuntSpec, work: Path, kept: KeptGuests, workers: int | None = None):
        fs = filesystem(spec.fs)
        base = formatted(fs, spec.recording_mode, spec.mib, work / "mkfs.img")
        self.checker = Checker(rig, fs, batch=1, plug=Plug.HOT, workers=workers or default_workers(), kept=kept,
                               slots=spec.slots)
        self.recorder = Recorder(rig, fs, spec.recording_mode, base, spec.mib, keep_disk=spec.keep_disk)

    def close(self) -> None:
        self.recorder.close()


def _hunt_on(rig: Rig, todo: list[str], spec: HuntSpec, place: Place, run: HuntRun, journal: Journal,
             started: float) -> None:
    """The workloads `todo` on one kernel: its recording guest and checker guests, up for
    this kernel only."""
    work = make_workdir(place.out)
    kept = KeptGuests()  # the checker guests stay up from one chunk to the next
    try:
        guests = HuntGuests(rig, spec, work, kept)
        try:
            chunks = [todo[at:at + spec.chunk] for at in range(0, len(todo), spec.chunk)]
            judge_chunks(chunks, spec, guests, work, place, run, journal.append, started)
        finally:
            guests.close()
    finally:
        kept.close()
        shutil.rmtree(work, ignore_errors=True)


def judge_chunks(chunks: list[list[str]], spec: HuntSpec, guests: HuntGuests, work: Path, place: Place, run: HuntRun,
                 keep, started: float | None = None) -> None:
    """Record, check and judge each chunk of workload ids on `guests`, and `keep` (a callable)
    each chunk's journal lines; a failing workload's artifacts go under `place`, the recordings
    and states in hand under `work`. Both the local hunt and a cluster worker's task (one chunk
    each) run this.

    Each chunk is judged while the next one is recorded (`spec.overlap`): the recording guest
    and the checker guests work at once. With a budget, no chunk starts recording once it is
    spent (`started`: when the budget began). On any exception the chunk being recorded stops
    after its workload in hand and is dropped: only judged chunks are kept."""
    started, stop = time.monotonic() if started is None else started, threading.Event()
    bar = Progress("workloads", sum(map(len, chunks)))
    recorder, checker, boots = guests.recorder, guests.checker, guests.recorder.boots
    checker.timing = run.timing

    with ThreadPoolExecutor(1, thread_name_prefix="plugpull-recorder") as pool:
        def ahead(index: int):
            if index >= len(chunks):
                return None
            if spent(spec, started):
                run.stopped_by_budget = True
                return None
            return pool.submit(record_chunk, chunks[index], spec, recorder, work, place, run, stop)

        recording = ahead(0)
        try:
            for index in range(len(chunks)):
                if recording is None:
                    break
                recorded, lines, record_share = recording.result()
                if spec.overlap:
                    recording = ahead(index + 1)
                lines += judge_chunk(recorded, record_share, spec, checker, place, run)
                if not spec.overlap:
                    recording = ahead(index + 1)
                run.new += sum(not line.get("infra") for line in lines)
                keep(lines)
                bar.advance(len(lines))
        finally:
            stop.set()
            if recording is not None:
                wait([recording])
            run.boots += recorder.boots - boots


def record_chunk(ids: list[str], spec: HuntSpec, recorder: Recorder, work: Path, place: Place, run: HuntRun,
                 stop: threading.Event) -> tuple[list, list[dict], float]:
    """The chunk's records as (workload, Record), the journal lines of those with none, and
    the recording's seconds per workload."""
    t0 = time.monotonic()
    recorded, lines = [], []
    for ident in ids:
        if stop.is_set():
            break
        workload = generated_workload(f"gen:{ident}", spec.fs)
        outcome = _recorded(recorder, workload, work / ident, run)
        if isinstance(outcome, Record):
            recorded.append((workload, outcome))
        else:
            lines.append(_unrecorded_line(workload, outcome, place))
    seconds = time.monotonic() - t0
    run.record_s += seconds
    return recorded, lines, seconds / max(1, len(ids))


def point_jobs(rec: Record, entries, models=MODELS) -> list[StateJob]:
    """The states a hunt checks of a workload: each model at each of its `point_cuts`."""
    return [StateJob(model, cut) for model in models for cut in point_cuts(entries, rec.acks)]


def judge_chunk(recorded: list, record_share: float, spec: HuntSpec, checker: Checker, place: Place,
                run: HuntRun) -> list[dict]:
    """Judge all the states of the recorded workloads at once: their journal lines, each with
    its seconds (its share of the chunk's recording and checking)."""
    t0 = time.monotonic()
    batches = []
    for workload, rec in recorded:
        entries = list(iter_entries(rec.log))
        batches.append(Batch(rec, point_jobs(rec, entries, spec.models), workload, spec.seed, rec.dir / "states", entries))
    judged_all = judge_many(batches, checker, fsck=spec.fsck) if batches else []
    seconds = time.monotonic() - t0
    run.check_s += seconds
    lines = []
    for (workload, rec), batch, judged in zip(recorded, batches, judged_all):
        lines.append(_judged_line(workload, rec, batch, judged, spec, place, record_share + seconds / len(recorded)))
        run.states += len(judged)
        run.distinct += len({j.distinct for j in judged})
        remove_states([j.state for j in judged])
        shutil.rmtree(rec.dir, ignore_errors=True)
    return lines


def _recorded(recorder: Recorder, workload: GeneratedWorkload, directory: Path, run: HuntRun):
    """The workload's record, or Failed. A guest that failed the harness is Failed too, unless
    it is the INFRA_IN_A_ROW-th in a row: then InfraError, and the hunt stops, its journal kept."""
    try:
        outcome = recorder.record(workload, directory)
        run.streak = 0
    except (GuestError, LaunchError, InfraError) as e:
        run.streak += 1
        if run.streak >= INFRA_IN_A_ROW:
            raise InfraError(f"the harness failed on {INFRA_IN_A_ROW} workloads in a row; the last: {e}") from e
        outcome = Failed(f"harness: {str(e).splitlines()[0][:200]}")
    if isinstance(outcome, Failed) and not outcome.kernel:
        run.infra.append((workload.ident, outcome.why))
    return outcome


def _unrecorded_line(workload: GeneratedWorkload, failed: Failed, place: Place) -> dict:
    text = workload.generated.text()
    if not failed.kernel:
        return {"id": workload.ident, "kernel": place.kernel, "ops": text, "infra": failed.why}
    where = place.failing(workload.ident)
    where.mkdir(parents=True, exist_ok=True)
    (where / "program.sh").write_text(workload.program())
    (where / "kernel.txt").write_text(failed.kernel["excerpt"] or failed.kernel["line"])
    line = {"id": workload.ident, "kernel": place.kernel, "ops": text, "states": 0, "distinct": 0,
            "verdicts": {"kernel-crash": 1}, "rules": {"kernel": 1}, "lost_kinds": ["kernel"], "lost_names": [],
            "failing": True, "reason": f"while recording: {failed.why}"[:300],
            "artifact": str(where.relative_to(place.out)), "seconds": 0.0}
    return line


def _judged_line(workload: GeneratedWorkload, rec: Record, batch: Batch, judged, spec: HuntSpec, place: Place,
                 seconds: float) -> dict:
    where = place.failing(workload.ident)
    labels = {"fs": spec.fs, "mode": spec.mode, "workload": f"gen:{workload.ident}", "seed": spec.seed}
    results = state_results(rec, batch.jobs, judged, labels, where)
    line = {**workload_line(workload.ident, workload.generated.text(), results, None, seconds), "kernel": place.kernel}
    if not spec.fsck.always:
        line["fscked"] = len({j.distinct for j in judged if j.observation.fsck_rc is not None})
    if any(r.artifact for r in results):
        (where / "program.sh").write_text(workload.program())
        line["artifact"] = str(where.relative_to(place.out))
    return line
