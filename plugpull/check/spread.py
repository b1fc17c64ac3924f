"""The checker's batches spread over hosts (`--hosts`): crash states are independent, so each
host checks whole batches on checker guests of its own, taking the next batch from one queue
as soon as it is done with one.

A host drops out when a batch leaves infra-errors on it and its backend no longer answers
(`reachable`): its batch goes back to the queue for the others. A state that is an
infra-error on a host still up is tried again, as many times as there are hosts. States become
infra-errors only when no host is left to take them. Every observation lands at its state's
index, so the results are the same whatever the number of hosts.
"""

import logging
import math
import threading
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from plugpull.check.verdict import Observation

log = logging.getLogger(__name__)


@dataclass
class Batch:
    jobs: list  # (index, state, collect)
    tries: int = 0


def host_name(backend) -> str:
    return getattr(backend, "uri", None) or getattr(backend, "name", "host")


def reachable(backend) -> bool:
    probe = getattr(backend, "reachable", None)
    return probe() if probe else True


class HostQueue:
    """The batches left, shared by every host's workers, and the observations made."""

    def __init__(self, batches: list[list], workers: int, max_tries: int, progress=None):
        self._pending = deque(Batch(b) for b in batches)
        self._cond = threading.Condition()
        self._in_flight = 0
        self._workers = workers
        self._max_tries = max_tries
        self._progress = progress
        self.out: dict[int, Observation] = {}
        self.reached: Counter = Counter()  # host -> states judged there
        self.dropped: list[str] = []

    def take(self) -> Batch | None:
        """The next batch; waits while others are in flight (a failing host may give one back)."""
        with self._cond:
            while not self._pending and self._in_flight:
                self._cond.wait()
            if not self._pending:
                return None
            self._in_flight += 1
            return self._pending.popleft()

    def settle(self, host: str, batch: Batch, observations: list[Observation], host_up: bool) -> None:
        """Keep the batch's verdicts; requeue its infra-errors while some host can take them."""
        with self._cond:
            self._in_flight -= 1
            if not host_up:
                self._workers -= 1
                self.dropped.append(host)
            failed = []
            for job, obs in zip(batch.jobs, observations):
                if obs.infra_error and batch.tries + 1 < self._max_tries and self._workers:
                    failed.append(job)
                else:
                    self._done(host, job[0], obs)
            if failed:
                self._pending.append(Batch(failed, batch.tries + 1))
            if not self._workers:
                self._drain(observations)
            self._cond.notify_all()

    def _done(self, host: str, index: int, obs: Observation) -> None:
        self.out[index] = obs
        if not obs.infra_error:
            self.reached[host] += 1
        if self._progress:
            self._progress()

    def _drain(self, observations: list[Observation]) -> None:
        reason = next((o.infra_error for o in observations if o.infra_error), "every host dropped out")
        while self._pending:
            for job in self._pending.popleft().jobs:
                self._done("", job[0], Observation(-1, -1, infra_error=f"no host could take it: {reason}"))


def batches_for(jobs: list, batch: int, workers: int) -> list[list]:
    """Batches of at most `batch` states, small enough that every worker gets one."""
    size = max(1, min(batch, math.ceil(len(jobs) / max(1, workers))))
    return [jobs[i:i + size] for i in range(0, len(jobs), size)]


class SpreadPath:
    """Batches of at most `batch` states checked on `hosts`, by a cold path each (`colds`,
    one per host, on that host's rig), `per_host` guests at a time on each. After a check,
    `reached` says how many states each host judged."""

    def __init__(self, hosts: tuple, colds: list, per_host: int, batch: int):
        self.hosts, self.colds, self.per_host, self.batch = hosts, colds, max(1, per_host), batch
        self.reached: dict | None = None

    def check(self, jobs: list, progress=None) -> list[Observation]:
        """The observations of `jobs` (index, state, collect), in order."""
        workers = self.per_host * len(self.hosts)
        queue = HostQueue(batches_for(jobs, self.batch, workers), workers,
                          max_tries=len(self.hosts) + 1, progress=progress)
        tasks = [c for c in self.colds for _ in range(self.per_host)]
        pool = ThreadPoolExecutor(max_workers=len(tasks), thread_name_prefix="plugpull-host")
        try:
            for future in [pool.submit(_host_worker, c, queue) for c in tasks]:
                future.result()
        except BaseException:
            for c in self.colds:
                c.crew.stop()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        log.info("states checked per host: %s%s", dict(queue.reached),
                 f"; dropped out: {', '.join(queue.dropped)}" if queue.dropped else "")
        self.reached = dict(queue.reached)
        return [queue.out[index] for index, _, _ in jobs]


def _host_worker(cold, queue: HostQueue) -> None:
    backend = cold.rig.backend
    host = host_name(backend)
    while (batch := queue.take()) is not None:
        observations = cold.check_chunk(batch.jobs, None)
        host_up = not any(o.infra_error for o in observations) or reachable(backend)
        if not host_up:
            log.warning("host %s dropped out; its %d states go to the other hosts", host, len(batch.jobs))
        queue.settle(host, batch, observations, host_up)
        if not host_up:
            return
