"""Workers waited for and workers lost, as both coordinators see them (`crash_coordinator`,
`hunt_coordinator`), with the bounds they share."""

from plugpull.errors import InfraError

RETRIES = 2
WORKER_WAIT = 60.0  # seconds a run waits for the cluster's first worker
REACH_TIMEOUT = 10.0  # seconds `reach` tries to connect


class WorkerLost(InfraError):
    """A worker died (or left) while it held the record or a task: no verdict for the run."""


def lost_message(address: str, before: set, after: set | None, error: BaseException, hunt: bool = False) -> str:
    """One line that names the workers lost (those gone from the scheduler since the run
    began), instead of Dask's `FutureCancelledError: ... already forgotten`. A hunt's journal
    keeps what was judged: run again, it goes on from there."""
    gone = sorted(before - after) if after is not None else []
    named = (f"worker {gone[0]}" if len(gone) == 1 else f"workers {', '.join(gone)}") if gone else "a worker"
    left = "" if after is None else f"; {len(after)} worker(s) left"
    then = ("the workloads judged are in the journal, run the hunt again to go on" if hunt
            else "no verdict, rerun the check")
    return (f"the cluster {address} lost {named} in the middle of the {'hunt' if hunt else 'check'} "
            f"(stopped or killed){left}: {then} ({type(error).__name__})")


def wait_for_a_worker(client, address: str) -> None:
    """Until the cluster has a worker; an InfraError, saying what to start, after WORKER_WAIT s."""
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except TimeoutError:
        raise InfraError(f"the cluster's scheduler {address} has had no worker for "
                         f"{WORKER_WAIT:.0f} s: start one (plugpull worker --scheduler ...)") from None


def workers_now(client) -> set | None:
    """The workers the scheduler has now; None when it cannot say."""
    try:
        return set(client.scheduler_info()["workers"])
    except Exception:  # the scheduler gone too: the message says what it can
        return None
