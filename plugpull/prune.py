"""Pruning plugpull's cache by one policy: keep what was used in the last `days` days and the
newest entry of each kind; remove the rest, never what a running process holds.

Why an age and not a size cap: every entry is keyed by what it is made of, and a built kernel
or an unpacked source costs minutes to hours to make again under TCG's host, so what was used
recently stays whatever its size; what was not used for a month is what a cap would have taken
first anyway. An entry's last use is the newest mtime of it and of what it directly holds
(plugpull touches a cached kernel's, build's, payload's and record's manifest, and an fstests
root's and a bisect clone's folder, when it uses it).

Each kind (`Kind`) is registered by the module that keeps its cache (`register`): a folder
of the cache whose entries are its direct children (names starting with a dot are in-flight
or locks, never entries), the lock files that a
writer holds while it works there (one held: the kind is left alone this time), and an
optional lock file inside each entry (held: that entry stays). Nothing outside the cache is
followed: a kind's folder that is a link, or that resolves outside the cache, is skipped; an
entry that is a link is removed as a link; a companion (a build's log) reached through a link
(`kernels/builds/logs` a link to another directory) stays where it is. An entry that cannot be
removed (no permission) is said, and the others go on.
"""

import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from plugpull.files import first_link
from plugpull.locks import held

DAY = 86400


@dataclass(frozen=True)
class Kind:
    name: str                                    # the folder, relative to the cache
    locks: Callable[[Path], list[Path]] = lambda folder: []   # held by a writer: leave the kind alone
    entry_lock: str | None = None                # held inside an entry: keep that entry
    companions: Callable[[Path], list[Path]] = lambda entry: []  # removed with an entry
    entry: Callable[[Path], bool] = lambda path: True       # what counts as an entry of the kind
    candidate: Callable[[Path], bool] = lambda entry: True  # an entry that may go when old
    aged: bool = True                            # False: every candidate goes, whatever its age


@dataclass
class Outcome:
    kind: str
    removed: list[Path] = field(default_factory=list)
    kept: int = 0
    freed: int = 0
    busy: str | None = None
    failed: list[tuple[Path, str]] = field(default_factory=list)  # what could not be removed, and why

    def line(self, dry_run: bool) -> str:
        if self.busy:
            return f"{self.kind}: left alone ({self.busy})"
        verb = "would remove" if dry_run else "removed"
        failed = f", could not remove {len(self.failed)}" if self.failed else ""
        return f"{self.kind}: {verb} {len(self.removed)} ({human(self.freed)}), kept {self.kept}{failed}"


def human(size: float) -> str:
    unit = "B"
    for bigger in ("KiB", "MiB", "GiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.0f} B" if unit == "B" else f"{size:.1f} {unit}"


def mark_used(path: Path) -> None:
    """Note that a cached thing was used now (its mtime), for the policy above."""
    try:
        os.utime(path)
    except OSError:
        pass


def last_use(entry: Path) -> float:
    times = [entry.lstat().st_mtime]
    if entry.is_dir() and not entry.is_symlink():
        times += [child.lstat().st_mtime for child in entry.iterdir()]
    return max(times)


def disk_bytes(path: Path) -> int:
    """The space `path` takes, links not followed; a file with hard links elsewhere (a work
    copy of a source) counts its share, one part per link, since removing one frees nothing."""
    if path.is_symlink() or not path.is_dir():
        return _share(path.lstat())
    total = path.lstat().st_blocks * 512
    for folder, dirs, files in os.walk(path):
        total += sum(_share(os.lstat(os.path.join(folder, name))) for name in dirs + files)
    return total


def _share(st: os.stat_result) -> int:
    links = 1 if stat.S_ISDIR(st.st_mode) else max(st.st_nlink, 1)
    return st.st_blocks * 512 // links


def inside(folder: Path, root: Path) -> bool:
    """`folder` is a real directory of the cache `root`, reached without a link."""
    return folder.is_dir() and first_link(root, folder) is None


def remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def prune_kind(root: Path, kind: Kind, days: float, dry_run: bool, now: float | None = None) -> Outcome:
    """One kind pruned (or, `dry_run`, what would be)."""
    folder = root / kind.name
    outcome = Outcome(kind.name)
    if not inside(folder, root):
        return outcome
    busy = [lock for lock in kind.locks(folder) if held(lock)]
    if busy:
        outcome.busy = f"{busy[0].relative_to(root)} is held by a running process"
        return outcome
    entries = sorted((e for e in folder.iterdir() if not e.name.startswith(".") and kind.entry(e)),
                     key=last_use, reverse=True)
    cutoff = (now or time.time()) - days * DAY
    for i, entry in enumerate(entries):
        recent = kind.aged and (i == 0 or last_use(entry) >= cutoff)
        in_use = kind.entry_lock is not None and held(entry / kind.entry_lock)
        if recent or in_use or not kind.candidate(entry):
            outcome.kept += 1
            continue
        extra = [c for c in kind.companions(entry) if os.path.lexists(c) and inside(c.parent, root)]
        try:
            freed = sum(disk_bytes(p) for p in [entry, *extra])
            if not dry_run:
                for path in [entry, *extra]:
                    remove(path)
        except OSError as e:
            outcome.failed.append((entry, e.strerror or str(e)))
            continue
        outcome.freed += freed
        outcome.removed.append(entry)
    return outcome


def prune(root: Path, kinds: list[Kind], days: float, dry_run: bool) -> list[Outcome]:
    root = Path(root)
    return [prune_kind(root, kind, days, dry_run) for kind in kinds] if root.is_dir() else []


_KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """A cache's kind, registered by the module that keeps that cache when it is imported (as
    syzkaller's VM backends register themselves): prune knows no cache's layout."""
    if kind.name in _KINDS:
        raise ValueError(f"cache kind {kind.name!r} registered twice")
    _KINDS[kind.name] = kind
    return kind


def registered() -> list[Kind]:
    """The kinds registered so far, in their folders' order."""
    return [_KINDS[name] for name in sorted(_KINDS)]
