"""A cluster of this machine in subprocesses, for the tests and the benchmark: a `plugpull
scheduler` and N `plugpull worker`s on loopback, each worker with a work dir and a temp dir
of its own (nothing is shared through files), every process stopped by its pid on exit.

    with spawned(2, root, accel="tcg") as cluster:
        ClusterJudge(cluster.address) ...
        cluster.kill_worker(0)          # SIGKILL, as a machine that goes away
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.errors import InfraError

START_TIMEOUT = 300.0  # a worker builds or finds the guest image before it announces itself


@dataclass
class Spawned:
    address: str
    scheduler: subprocess.Popen
    workers: list[subprocess.Popen] = field(default_factory=list)
    workdirs: list[Path] = field(default_factory=list)

    def kill_worker(self, i: int) -> None:
        os.kill(self.workers[i].pid, signal.SIGKILL)
        self.workers[i].wait()

    @property
    def processes(self) -> list[subprocess.Popen]:
        return [*self.workers, self.scheduler]


def _start(argv: list[str], out: Path, env: dict | None = None) -> subprocess.Popen:
    with open(out, "wb") as f, open(out.with_suffix(".err"), "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "plugpull", *argv], stdout=f, stderr=err,
                                env={**os.environ, **(env or {})}, start_new_session=True)


def _announced(proc: subprocess.Popen, out: Path, what: str) -> str:
    """The address the process prints once it listens."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        for line in out.read_text().splitlines():
            if line.startswith(f"{what} at "):
                return line.split(" at ", 1)[1]
        if proc.poll() is not None:
            tail = out.with_suffix(".err").read_text()[-2000:]
            raise InfraError(f"plugpull {what} exited {proc.returncode}: {tail}")
        time.sleep(0.2)
    raise InfraError(f"plugpull {what} did not start in {START_TIMEOUT:g} s")


def stop(proc: subprocess.Popen, grace: float = 30.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def spawned(workers: int, root: Path, accel: str = "auto", extra: tuple[str, ...] = ()):
    """A scheduler and `workers` workers under `root` (which this removes on exit)."""
    root.mkdir(parents=True, exist_ok=True)
    sched = _start(["scheduler", "--port", "0"], root / "scheduler.out")
    cluster = Spawned("", sched)
    try:
        cluster.address = _announced(sched, root / "scheduler.out", "scheduler")
        for i in range(workers):
            workdir = root / f"worker{i}"
            (workdir / "tmp").mkdir(parents=True)
            argv = ["worker", "--scheduler", cluster.address, "--workdir", str(workdir), "--accel", accel, *extra]
            cluster.workers.append(_start(argv, root / f"worker{i}.out", {"TMPDIR": str(workdir / "tmp")}))
            cluster.workdirs.append(workdir)
        for i, proc in enumerate(cluster.workers):
            _announced(proc, root / f"worker{i}.out", "worker")
        yield cluster
    finally:
        for proc in cluster.processes:
            stop(proc)
        shutil.rmtree(root, ignore_errors=True)
