"""A hunt: generated workloads, a chunk at a time, recorded in one guest and judged together.

    result = hunt(HuntSpec(seq=1, fs="ext4"), rig, Path("results/hunt-ext4"))

Per chunk, each workload is recorded on its own copy of one formatted image (`record`), the
states around its persistence points are built (`points`), every state of the chunk is checked
in one pass of the checker guests (`judge_many`) and judged by the workload's model oracle,
and each workload's line goes to the journal. A workload with a state that is not clean keeps
its record and those states under `failing/ID/`, ready for `replay` and `minimise`. With a
budget, no chunk starts once it is spent.
"""

import logging
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.check.checker import Checker, Plug, default_workers
from plugpull.check.hotguest import KeptGuests
from plugpull.crash.judge import Batch, judge_many, remove_states
from plugpull.crash.record import Record
from plugpull.crash.run import state_results
from plugpull.errors import GuestError, InfraError, LaunchError
from plugpull.generate.program import program
from plugpull.generate.space import Space
from plugpull.generate.workload import GeneratedWorkload, generated_workload
from plugpull.guest.rig import Rig
from plugpull.hunt.journal import Journal, check_out
from plugpull.hunt.points import CUTS, MODELS, point_jobs
from plugpull.hunt.record import Failed, Recorder, formatted
from plugpull.hunt.summary import workload_line
from plugpull.workdirs import make_workdir
from plugpull.powerloss.writelog import iter_entries
from plugpull.progress import Progress
from plugpull.testbed.fs import filesystem, mode as mode_named

log = logging.getLogger(__name__)

DISK_MIB = {"xfs": 300, "btrfs": 128}  # mkfs's smallest; 64 MiB for the rest
INFRA_IN_A_ROW = 3  # workloads the harness failed on in a row, after which the hunt stops (exit 3)


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

    def settings(self, kernel: str) -> dict:
        """What a resumed hunt must share with the one it goes on from."""
        return {"seq": self.seq, "ops": list(self.ops), "sample": self.sample, "seed": self.seed, "fs": self.fs,
                "mode": self.mode, "disk_mib": self.mib, "kernel": kernel, "models": list(self.models), "cuts": CUTS}


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


def workload_ids(space: Space, sample: int | None, seed: int) -> list[str]:
    if sample is not None:
        return [space.workload(i).ident for i in space.sample(sample, seed)]
    return [w.ident for w in space.workloads()]


def hunt(spec: HuntSpec, space: Space, rig: Rig, out: Path) -> HuntRun:
    fs = filesystem(spec.fs)
    settings = spec.settings(rig.image.kernel_release)
    check_out(out, settings)
    journal = Journal(out, settings)
    ids = workload_ids(space, spec.sample, spec.seed)
    todo = [i for i in ids if i not in journal.done]
    run = HuntRun(settings, len(ids), [])
    if todo:
        log.info(f"hunting: {len(todo)} of {len(ids)} workloads to go ({len(ids) - len(todo)} done before)")
    work = make_workdir(out)
    kept = KeptGuests()  # the checker guests stay up from one chunk to the next
    try:
        base = formatted(fs, spec.recording_mode, spec.mib, work / "mkfs.img")
        checker = Checker(rig, fs, batch=1, plug=Plug.HOT, workers=default_workers(), kept=kept)
        with Recorder(rig, fs, spec.recording_mode, base, spec.mib) as recorder:
            chunks = [todo[at:at + spec.chunk] for at in range(0, len(todo), spec.chunk)]
            started = time.monotonic()
            _pipeline(chunks, spec, recorder, checker, work, out, run, journal)
            run.wall_s, run.boots = time.monotonic() - started, recorder.boots
    finally:
        kept.close()
        shutil.rmtree(work, ignore_errors=True)
    run.lines = [journal.done[i] for i in ids if i in journal.done]
    return run


def _pipeline(chunks: list[list[str]], spec: HuntSpec, recorder: Recorder, checker: Checker, work: Path,
              out: Path, run: HuntRun, journal: Journal) -> None:
    """Judge each chunk while the next one is recorded (`spec.overlap`): the recording guest
    and the checker guests work at once. With a budget, no chunk starts recording once it is
    spent. On any exception the chunk being recorded stops after its workload in hand and is
    dropped: the journal holds judged chunks only."""
    started, stop = time.monotonic(), threading.Event()
    bar = Progress("workloads", sum(map(len, chunks)))

    def spent() -> bool:
        return spec.budget_s is not None and time.monotonic() - started >= spec.budget_s

    with ThreadPoolExecutor(1, thread_name_prefix="plugpull-recorder") as pool:
        def ahead(index: int):
            if index >= len(chunks):
                return None
            if spent():
                run.stopped_by_budget = True
                return None
            return pool.submit(record_chunk, chunks[index], spec, recorder, work, out, run, stop)

        recording = ahead(0)
        try:
            for index in range(len(chunks)):
                if recording is None:
                    break
                recorded, lines, record_share = recording.result()
                if spec.overlap:
                    recording = ahead(index + 1)
                lines += judge_chunk(recorded, record_share, spec, checker, out, run)
                if not spec.overlap:
                    recording = ahead(index + 1)
                run.new += sum(not line.get("infra") for line in lines)
                journal.append(lines)
                bar.advance(len(lines))
        finally:
            stop.set()
            if recording is not None:
                wait([recording])


def record_chunk(ids: list[str], spec: HuntSpec, recorder: Recorder, work: Path, out: Path, run: HuntRun,
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
            lines.append(_unrecorded_line(workload, outcome, out))
    seconds = time.monotonic() - t0
    run.record_s += seconds
    return recorded, lines, seconds / max(1, len(ids))


def judge_chunk(recorded: list, record_share: float, spec: HuntSpec, checker: Checker, out: Path,
                run: HuntRun) -> list[dict]:
    """Judge all the states of the recorded workloads at once: their journal lines, each with
    its seconds (its share of the chunk's recording and checking)."""
    t0 = time.monotonic()
    batches = []
    for workload, rec in recorded:
        entries = list(iter_entries(rec.log))
        batches.append(Batch(rec, point_jobs(rec, entries, spec.models), workload, spec.seed, rec.dir / "states", entries))
    judged_all = judge_many(batches, checker) if batches else []
    seconds = time.monotonic() - t0
    run.check_s += seconds
    lines = []
    for (workload, rec), batch, judged in zip(recorded, batches, judged_all):
        lines.append(_judged_line(workload, rec, batch, judged, spec, out, record_share + seconds / len(recorded)))
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


def _unrecorded_line(workload: GeneratedWorkload, failed: Failed, out: Path) -> dict:
    text = workload.generated.text()
    if not failed.kernel:
        return {"id": workload.ident, "ops": text, "infra": failed.why}
    where = out / "failing" / workload.ident
    where.mkdir(parents=True, exist_ok=True)
    (where / "program.sh").write_text(program(workload.generated))
    (where / "kernel.txt").write_text(failed.kernel["excerpt"] or failed.kernel["line"])
    line = {"id": workload.ident, "ops": text, "states": 0, "distinct": 0, "verdicts": {"kernel-crash": 1},
            "rules": {"kernel": 1}, "lost_kinds": ["kernel"], "lost_names": [], "failing": True,
            "reason": f"while recording: {failed.why}"[:300],
            "artifact": str(where.relative_to(out)), "seconds": 0.0}
    return line


def _judged_line(workload: GeneratedWorkload, rec: Record, batch: Batch, judged, spec: HuntSpec, out: Path,
                 seconds: float) -> dict:
    where = out / "failing" / workload.ident
    labels = {"fs": spec.fs, "mode": spec.mode, "workload": f"gen:{workload.ident}", "seed": spec.seed}
    results = state_results(rec, batch.jobs, judged, labels, where)
    line = workload_line(workload.ident, workload.generated.text(), results, None, seconds)
    if any(r.artifact for r in results):
        (where / "program.sh").write_text(program(workload.generated))
        line["artifact"] = str(where.relative_to(out))
    return line
