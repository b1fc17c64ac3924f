"""The coordinator's side of `hunt --cluster`: chunks of workload names go out, judged lines
and failing artifacts come back, and the journal stays here.

    run = ClusterHunt("tcp://127.0.0.1:8786")(spec, space, rigs, out)   # a HuntRun, as `hunt` gives

The hunt in `out` is opened as a local one is (`open_hunt`: the same settings check, the
same journal), so either may go on from the other. Its ids not yet judged go out in chunks,
per kernel: a (kernel, chunk) task runs on a worker whose guest image is that kernel's
(`hunt_task.hunt_chunk`; it asks for the Dask resource that names the image, which each
`plugpull worker` holds one of: `worker.image_resource`). A few more tasks than the workers'
threads are out at a time, so that a spent `--budget` stops the hunt within a chunk per
worker. Each answer is merged as it
comes (`Merge`): failing artifacts unpacked into a scratch dir in `out`, then renamed into
`failing/ID/`, then the lines appended to the journal, every (id, kernel) at most once: a
chunk run twice (its worker lost, its answer late) never judges a workload twice. Ctrl-C
loses no line merged. A worker lost mid-chunk has its chunk run elsewhere by the scheduler;
with no worker of that kernel left, the hunt stops with one line naming the lost (exit 3).
"""

import logging
import os
import shutil
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from distributed import Client
from distributed.client import FutureCancelledError, FuturesCancelledError
from distributed.scheduler import KilledWorker

from plugpull.cluster.bundle import unpack_tree
from plugpull.cluster.hunt_task import ChunkResult, hunt_chunk
from plugpull.cluster.lost import REACH_TIMEOUT, RETRIES, WorkerLost, lost_message, wait_for_a_worker, workers_now
from plugpull.cluster.reach import SchedulerUnreachable, probe
from plugpull.cluster.worker import image_resource
from plugpull.errors import InfraError
from plugpull.hunt.journal import Journal, whole_line
from plugpull.hunt.hunter import HuntRun, HuntSpec, Place, close_run, open_hunt, spent
from plugpull.workdirs import make_workdir

log = logging.getLogger(__name__)

POLL = 5.0  # seconds between looks at the workers while no chunk comes back
SETTLED = ("finished", "error", "cancelled")  # a future's states that say how its chunk ended
FETCH_TIMEOUT = 60.0  # seconds to fetch a finished chunk's answer from its worker
AHEAD = 1  # tasks out beyond the workers' threads, so that a worker that frees up finds one


class NoWorkerLeft(InfraError):
    """No worker that may run a chunk is left (said in the WorkerLost that names the lost)."""


@dataclass(frozen=True)
class Chunk:
    kernel: str
    image_key: str
    ids: tuple[str, ...]


def chunks_to_go(rigs, ids: list[str], journal: Journal, size: int) -> list[Chunk]:
    """Per kernel, in the order given, its ids not yet judged, `size` at a time."""
    out = []
    for rig in rigs:
        kernel = rig.image.kernel_release
        todo = [i for i in ids if (i, kernel) not in journal.done]
        out += [Chunk(kernel, rig.image.key, tuple(todo[at:at + size])) for at in range(0, len(todo), size)]
    return out


class Merge:
    """Chunks' answers into the hunt in `out`: artifacts first, then the lines, each (id,
    kernel) once; the figures into `run`."""

    def __init__(self, out: Path, journal: Journal, run: HuntRun, several: bool):
        self.out, self.journal, self.run, self.several = out, journal, run, several
        self._stage: Path | None = None
        self._count = 0

    def __call__(self, result: ChunkResult, chunk: Chunk | None = None) -> int:
        """Merge one answer (to `chunk`: a line of another workload or kernel is refused); the
        number of lines written."""
        fresh, seen = [], set()
        for line in result.lines:
            if not whole_line(line) or chunk is not None and (line["id"] not in chunk.ids or
                                                              line.get("kernel") != chunk.kernel):
                raise InfraError(f"the cluster's answer holds a line that is not one of its chunk's: {str(line)[:120]}")
            key = self.journal.key(line)
            if key not in self.journal.done and key not in seen:
                seen.add(key)
                fresh.append(line)
        for line in fresh:
            if line.get("artifact"):
                self._place(line, result.artifacts)
        self.journal.append(fresh)
        if fresh:
            self._add_figures(result, fresh)
        return len(fresh)

    def _add_figures(self, result: ChunkResult, fresh: list[dict]) -> None:
        run = self.run
        run.new += sum(not line.get("infra") for line in fresh)
        run.infra += [(line["id"], line["infra"]) for line in fresh if line.get("infra")]
        run.states += result.states
        run.distinct += result.distinct
        run.record_s += result.record_s
        run.check_s += result.check_s
        run.boots += result.boots
        run.timing.add(*result.timing)

    def _place(self, line: dict, artifacts: dict) -> None:
        """The line's failing directory, from its packed bytes, renamed into place whole."""
        where = Place(self.out, line.get("kernel", ""), self.several).failing(line["id"])
        if self.out / line["artifact"] != where or line["artifact"] not in artifacts:
            raise InfraError(f"the cluster's answer for {line['id']}: its artifacts are not where its line says "
                             f"({line['artifact']!r})")
        if self._stage is None:
            self._stage = make_workdir(self.out)
        self._count += 1
        unpacked = self._stage / str(self._count)
        unpack_tree(artifacts[line["artifact"]], unpacked)
        if where.is_symlink() or where.is_file():
            where.unlink()
        elif where.exists():  # left by a stopped run before its line was written: never judged
            shutil.rmtree(where)
        where.parent.mkdir(parents=True, exist_ok=True)
        os.rename(unpacked, where)

    def close(self) -> None:
        if self._stage is not None:
            shutil.rmtree(self._stage, ignore_errors=True)


@dataclass
class ClusterHunt:
    address: str
    security: object = None  # distributed.Security, for tls:// addresses
    retries: int = RETRIES

    def reach(self) -> None:
        try:
            probe(self.address, self.security, "--cluster", REACH_TIMEOUT)
        except SchedulerUnreachable as e:
            raise InfraError(f"cannot reach the cluster's scheduler: {e}") from None

    def __call__(self, spec: HuntSpec, space, rigs, out: Path) -> HuntRun:
        kernels = [rig.image.kernel_release for rig in rigs]
        with open_hunt(spec, space, kernels, out) as (journal, ids, run):
            started = time.monotonic()
            queue = deque(chunks_to_go(rigs, ids, journal, spec.chunk))
            if queue and spent(spec, started):
                run.stopped_by_budget = True
            elif queue:
                log.info(f"hunting on {self.address}: {sum(len(c.ids) for c in queue)} (workload, kernel) pairs to "
                         f"go in {len(queue)} chunks")
                journal.begin()
                merge = Merge(out, journal, run, len(kernels) > 1)
                try:
                    self._drive(queue, spec, len(kernels) > 1, merge, started)
                finally:
                    merge.close()
            return close_run(run, journal, ids, kernels, started)

    def _drive(self, queue: deque, spec: HuntSpec, several: bool, merge: Merge, started: float) -> None:
        self.reach()  # Dask's own connect waits for no answer forever
        with Client(self.address, security=self.security, timeout=REACH_TIMEOUT) as client:
            wait_for_a_worker(client, self.address)
            before = set(client.scheduler_info()["workers"])
            running: dict = {}  # future -> its chunk, and the resource it asks for
            try:
                while queue or running:
                    self._fill(client, queue, running, spec, several, merge.run, started, before)
                    for future in self._finished(client, running, before):
                        try:
                            answer = future.result(timeout=FETCH_TIMEOUT)
                        except TimeoutError:  # its result went with its worker: it is run again
                            continue
                        merge(answer, running.pop(future)[0])
            except (FutureCancelledError, FuturesCancelledError, KilledWorker) as e:
                raise WorkerLost(lost_message(self.address, before, workers_now(client), e, hunt=True)) from None
            finally:
                client.cancel(list(running))

    def _fill(self, client, queue: deque, running: dict, spec: HuntSpec, several: bool, run: HuntRun,
              started: float, before: set) -> None:
        """Submit chunks until AHEAD more than the workers' threads are out; none once the
        budget is spent. A chunk asks for its kernel's image (`image_resource`), so it runs on
        a worker of that kernel, one that joins later included."""
        info = client.scheduler_info()["workers"]
        window = sum(w["nthreads"] for w in info.values()) + AHEAD
        while queue and len(running) < window:
            if spent(spec, started):
                run.stopped_by_budget = True
                queue.clear()
                return
            chunk = queue.popleft()
            wanted = image_resource(chunk.image_key)
            if not info:
                raise WorkerLost(lost_message(self.address, before, set(), NoWorkerLeft(), hunt=True))
            if not _holding(info, wanted):
                raise InfraError(f"no worker of the cluster {self.address} has the guest image of kernel "
                                 f"{chunk.kernel}: start one with that --kernel (plugpull worker --kernel ...)")
            future = client.submit(hunt_chunk, spec, chunk.kernel, several, list(chunk.ids), chunk.image_key,
                                   resources={wanted: 1}, retries=self.retries, pure=False,
                                   key=f"plugpull-hunt-{chunk.kernel}-{chunk.ids[0]}-{time.monotonic_ns()}")
            running[future] = chunk, wanted

    def _finished(self, client, running: dict, before: set) -> list:
        """The futures settled within POLL seconds (a result that was lost with its worker is
        not: the scheduler runs its chunk again); a WorkerLost once a chunk has no worker left
        that may run it."""
        deadline = time.monotonic() + POLL
        while time.monotonic() < deadline:
            settled = [f for f in running if f.status in SETTLED]
            if settled:
                return settled
            time.sleep(0.1)
        try:
            info = client.scheduler_info()["workers"]
        except Exception:  # the scheduler gone too: Dask says so on the next call
            return []
        if any(not _holding(info, wanted) for _, wanted in running.values()):
            raise WorkerLost(lost_message(self.address, before, set(info), NoWorkerLeft(), hunt=True))
        return []


def _holding(info: dict, resource: str) -> list[str]:
    """The workers (scheduler_info's) that hold `resource`."""
    return [w for w, about in info.items() if resource in (about.get("resources") or {})]
