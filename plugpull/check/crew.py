"""The worker threads a way of checking runs its guests on, and what stops them all: on any
failure (Ctrl-C) every guest of the crew is cut off at once, not when its states are done."""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from plugpull.errors import InfraError


def default_workers() -> int:
    """One checker guest per core: under TCG each guest keeps one core busy."""
    return max(1, min(2, os.cpu_count() or 1))


class Crew:
    """`workers` threads, the guests they have running (`running`, a set each guest adds
    itself to while up) and the event that stops them."""

    def __init__(self, workers: int = 1):
        self.workers = workers
        self.running: set = set()
        self._stop = threading.Event()

    def stopped(self) -> bool:
        return self._stop.is_set()

    def check_going(self) -> None:
        """InfraError once the crew is stopped: a state is not begun after that."""
        if self._stop.is_set():
            raise InfraError("checking was stopped")

    def stop(self) -> None:
        """Stop now: every running guest loses power."""
        self._stop.set()
        for m in list(self.running):
            m.power_cut()

    def in_parallel(self, tasks: list) -> list:
        """The tasks' results, run on `workers` threads; on any failure every guest stops."""
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="plugpull-checker")
        try:
            return list(pool.map(lambda task: task(), tasks))
        except BaseException:
            self.stop()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def tick(progress) -> None:
    if progress:
        progress()
