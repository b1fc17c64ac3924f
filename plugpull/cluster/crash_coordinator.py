"""The coordinator's side of `--cluster`: a stand-in for `crash.judge.judge` that has a
Dask cluster check the states.

    judging = ClusterJudge("tcp://127.0.0.1:8786")
    run_crash(spec, rig, out_dir, judging=judging)

The record is packed once (`bundle.pack`) and scattered to every worker (broadcast: one copy
each, and a worker that dies takes only its copy with it); each task names a few distinct
states (`crash_task`) and depends on the scattered record, so the wire carries the record once per
worker and then names and observations only. A task whose worker dies is run elsewhere by
the scheduler; one that raises is retried `retries` times. The observations land at their
states' indexes and are classified here, as a local run classifies them (`judged_jobs`).
"""

import logging
import pickle
from dataclasses import dataclass, field

from distributed import Client, as_completed
from distributed.client import FutureCancelledError
from distributed.scheduler import KilledWorker

from plugpull.cluster.bundle import pack
from plugpull.cluster.reach import SchedulerUnreachable, probe
from plugpull.cluster.crash_task import in_order, state_names, task_batches
from plugpull.cluster.lost import REACH_TIMEOUT, RETRIES, WorkerLost, lost_message, wait_for_a_worker, workers_now
from plugpull.cluster.worker import check_named, checker_settings
from plugpull.crash.judge import StateJob, debts, judged_jobs, plan_states, shared_collects
from plugpull.errors import InfraError

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class ShippedState:
    """A state built and checked on a worker: its digest came back; its images stayed there."""

    content_digest: str
    images: tuple = ()

    def digest(self) -> str:
        return self.content_digest

    def remove(self) -> None:
        pass


@dataclass
class ClusterJudge:
    address: str
    security: object = None  # distributed.Security, for tls:// addresses
    retries: int = RETRIES
    wire: dict = field(default_factory=dict)  # payload bytes of the last run: record, tasks, results; the record's copies

    def __call__(self, rec, jobs, checker, workload, seed: int, state_dir=None, entries=None, progress=None,
                 planned=None) -> list:
        jobs = [StateJob(*job) for job in jobs]
        planned = planned or plan_states(rec, jobs, seed, entries)
        owed, committed = debts(rec, jobs)
        bundle = pack(rec)
        names = state_names(bundle.digest, jobs, planned, seed, shared_collects(workload, planned, owed))
        answers = self.check(bundle, names, checker_settings(checker), checker.rig.image.key, checker.per_command,
                             progress)
        states = [ShippedState(digest) for _, digest in answers]
        return judged_jobs(rec, jobs, planned, [obs for obs, _ in answers], states, owed, committed, checker, workload)

    def reach(self) -> None:
        """Connect once and leave, within `REACH_TIMEOUT` seconds: a wrong address or TLS
        setting, or a listener that never answers, fails before the recording."""
        try:
            probe(self.address, self.security, "--cluster", REACH_TIMEOUT)
        except SchedulerUnreachable as e:
            raise InfraError(f"cannot reach the cluster's scheduler: {e}") from None

    def check(self, bundle, names, settings: dict, image_key: str, per_task: int, progress=None) -> list:
        """(Observation, digest) of each named state, in order."""
        self.reach()  # Dask's own connect waits for no answer forever
        with Client(self.address, security=self.security, timeout=REACH_TIMEOUT) as client:
            wait_for_a_worker(client, self.address)
            workers = set(client.scheduler_info()["workers"])
            threads = sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())
            shipped = client.scatter(bundle.data, broadcast=True)
            batches = task_batches(names, per_task, threads)
            futures = [client.submit(check_named, shipped, batch, settings, image_key, retries=self.retries,
                                     pure=False, key=f"plugpull-check-{bundle.digest[:12]}-{i}")
                       for i, batch in enumerate(batches)]
            answers = []
            try:
                for future in as_completed(futures):
                    answer = future.result()
                    answers.append(answer)
                    for _ in answer:
                        if progress:
                            progress()
            except (FutureCancelledError, KilledWorker) as e:
                client.cancel(futures)
                raise WorkerLost(lost_message(self.address, workers, workers_now(client), e)) from None
            except BaseException:
                client.cancel(futures)
                raise
            copies = len(client.who_has(shipped)[shipped.key])
            self.wire = {"record": len(bundle.data) * copies, "copies": copies,
                         "tasks": sum(len(pickle.dumps(b)) for b in batches),
                         "results": sum(len(pickle.dumps(a)) for a in answers), "workers": len(
                             client.scheduler_info()["workers"])}
        log.info("cluster %s: %d states in %d tasks on %d threads", self.address, len(names), len(batches), threads)
        try:
            return in_order(len(names), answers)
        except ValueError as e:
            raise InfraError(f"the cluster's answers: {e}") from None
