"""A worker's work dir, and what a dead worker left in it.

Workers may share a work dir (its record cache serves them all), so each one marks what it
makes with its process id: a marker `.plugpull-worker-PID` that it holds locked while it
runs, its states under `states/PID-THREAD`, its hunts' images and chunks under `hunts/PID`,
its Dask scratch under `dask/PID`, and half-made records as `records/.DIGEST.PID.THREAD`. A
worker that starts sweeps what every worker whose marker is no longer locked (it died:
SIGKILL, a crash) left under those names, then the marker; nothing else in the work dir is
touched, and a live worker's files never.

    with worker_dir(workdir) as mine:    # swept, marked and locked; mine.dask for Dask
        ...
"""

import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from plugpull.locks import exclusive, free
from plugpull.prune import Kind, register

MARKER = ".plugpull-worker-"  # a live worker holds its marker locked; prune leaves records alone then


@dataclass(frozen=True)
class WorkerDir:
    root: Path
    pid: int

    @property
    def dask(self) -> Path:
        return self.root / "dask" / str(self.pid)


def made_by(root: Path, pid: int) -> list[Path]:
    """What the worker of `pid` made in `root`, found by the names it gives them."""
    found = [p for p in (root / "states").glob(f"{pid}-*") if re.fullmatch(rf"{pid}-\d+", p.name)]
    found += [p for p in (root / "records").glob(f".*.{pid}.*") if re.fullmatch(rf"\.[0-9a-f]+\.{pid}\.\d+", p.name)]
    return [*found, *(root / kind / str(pid) for kind in ("dask", "hunts") if (root / kind / str(pid)).exists())]


def sweep_dead(root: Path) -> list[Path]:
    """Remove what each dead worker left in `root` (its marker no longer locked); the paths removed."""
    removed = []
    for marker in sorted(root.glob(f"{MARKER}*")):
        pid = marker.name[len(MARKER):]
        if not pid.isascii() or not pid.isdigit() or not marker.is_file() or marker.is_symlink():
            continue
        with free(marker) as dead:
            if not dead:
                continue  # a live worker
            for path in made_by(root, int(pid)):
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
                removed.append(path)
            marker.unlink()
            removed.append(marker)
    return removed


@contextmanager
def worker_dir(root: Path):
    """The work dir swept of dead workers' leftovers, with this worker's marker held locked."""
    root.mkdir(parents=True, exist_ok=True)
    sweep_dead(root)
    marker = root / f"{MARKER}{os.getpid()}"
    with exclusive(marker):
        mine = WorkerDir(root, os.getpid())
        yield mine
        for path in made_by(root, mine.pid):
            shutil.rmtree(path, ignore_errors=True)
        marker.unlink(missing_ok=True)


def _live_workers(folder: Path) -> list[Path]:
    return sorted(folder.parent.glob(f"{MARKER}*"))


register(Kind("cluster/records", locks=_live_workers))
