"""A run's scratch beside its results, and the sweep of scratch that dead runs left.

A crash run or a hunt keeps its recording and crash states (gigabytes at full scale) in
`OUT/.work-PID-XXXX` rather than in a temp dir that may be in memory. A SIGKILL or a lost
terminal leaves that directory behind, so a later run removes it, and only it:

- each work dir holds a marker (`.plugpull-work`) naming its owner: host, boot, pid and the
  pid's start time, so a pid reused after a reboot or by another process is not taken for the
  owner, and a directory on a results share made by another machine is never judged here;
- each is also listed in plugpull's cache (`workdirs/`), which is how a later run finds the
  scratch of a run with another out dir; nothing else next to or above an out dir is looked at;
- the out dir itself goes only if that run created it and nothing else is left in it.
"""

import hashlib
import json
import logging
import os
import shutil
import socket
import tempfile
from pathlib import Path

from plugpull.paths import WORK_PREFIX, cache_dir
from plugpull.prune import Kind, register

log = logging.getLogger(__name__)

MARK = ".plugpull-work"
REGISTRY = "workdirs"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def this_owner() -> dict:
    pid = os.getpid()
    return {"host": socket.gethostname(), "boot": _boot_id(), "pid": pid, "start": _start_time(pid)}


def owner_dead(owner: dict) -> bool:
    """Whether the run named by a marker is gone. False for another machine's run: its pids
    mean nothing here."""
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return False
    if owner.get("boot") != _boot_id():
        return True
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return False
    return _start_time(pid) != owner.get("start")


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def listed_work(listing: Path) -> Path | None:
    """The work dir a listing in the cache names; None for a listing that cannot be read."""
    entry = _read_json(listing)
    return Path(entry["work"]) if isinstance(entry, dict) and isinstance(entry.get("work"), str) else None


def _registry() -> Path:
    return cache_dir() / REGISTRY


def make_workdir(out_dir: Path) -> Path:
    """A new work dir in `out_dir` (created, with its parents, if missing), marked and listed
    as this process's. The scratch of dead runs is swept first."""
    out_dir = Path(out_dir)
    sweep_stale_workdirs(out_dir)
    made_out = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-", dir=out_dir))
    owner = this_owner()
    (work / MARK).write_text(json.dumps(owner) + "\n")
    entry = {"work": str(work.resolve()), "out": str(out_dir.resolve()), "made_out": made_out, "owner": owner}
    try:
        _registry().mkdir(parents=True, exist_ok=True)
        (_registry() / f"{hashlib.sha256(entry['work'].encode()).hexdigest()[:20]}.json").write_text(json.dumps(entry) + "\n")
    except OSError as e:
        log.debug(f"work dir {work} not listed in the cache ({e}): only a run in {out_dir} will sweep it")
    return work


def _ours_and_dead(work: Path) -> bool:
    """`work` is a directory (not a link) that holds a marker of a dead run of this machine."""
    return work.is_dir() and not work.is_symlink() and owner_dead(_read_json(work / MARK))


def sweep_stale_workdirs(out_dir: Path | None = None) -> list[Path]:
    """Remove the work dirs of dead runs: those the cache lists, and the marked ones directly
    in `out_dir`. An out dir that a dead run created goes too, if that leaves it empty."""
    removed = []
    for listed in sorted(_registry().glob("*.json")) if _registry().is_dir() else []:
        entry = _read_json(listed)
        if not isinstance(entry, dict) or not isinstance(entry.get("work"), str):
            listed.unlink(missing_ok=True)
            continue
        work = Path(entry["work"])
        if work.exists() and not _ours_and_dead(work):
            continue
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
            removed.append(work)
            _remove_if_empty(Path(entry.get("out", "")), entry.get("made_out") is True)
        listed.unlink(missing_ok=True)
    if out_dir is not None and Path(out_dir).is_dir() and not Path(out_dir).is_symlink():
        for work in sorted(Path(out_dir).glob(f"{WORK_PREFIX}*")):
            if _ours_and_dead(work):
                shutil.rmtree(work, ignore_errors=True)
                removed.append(work)
    return removed


def _remove_if_empty(out: Path, made_by_the_run: bool) -> None:
    if made_by_the_run and out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
        out.rmdir()


def _stale_listing(entry: Path) -> bool:
    work = listed_work(entry)
    return work is None or not work.exists()


register(Kind(REGISTRY, candidate=_stale_listing, aged=False))
