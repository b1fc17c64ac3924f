"""Where plugpull keeps things: the repo's data folders, the cache, its temp dirs."""

import os
import re
import shutil
import tempfile
from pathlib import Path

from plugpull.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
IMAGES_DIR = ROOT / "images"
VMCONFIG_DIR = ROOT / "vmconfig"

TEMP_PREFIX = "plugpull-"
_TEMP_RE = re.compile(rf"^{TEMP_PREFIX}(\d+)-")
WORK_PREFIX = ".work-"


def cache_dir() -> Path:
    if os.environ.get("PLUGPULL_CACHE"):
        return Path(os.environ["PLUGPULL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "plugpull"


def check_cache_dir() -> None:
    """A UsageError if the cache is set to something that is not a directory, or to a place
    plugpull cannot write in (checked before any work: each stage reaches the cache at its
    own time). Nothing is made: a missing cache is tried in its nearest existing parent."""
    path = cache_dir()
    if path.is_symlink() and not path.exists():
        raise UsageError(f"PLUGPULL_CACHE {path}: a dangling link, not a directory")
    if path.exists() and not path.is_dir():
        raise UsageError(f"the cache {path} is not a directory: set PLUGPULL_CACHE to a directory")
    where = path
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise UsageError(f"the cache {path}: {where} is not a directory: set PLUGPULL_CACHE to a directory")
    try:
        tempfile.TemporaryFile(dir=where).close()
    except OSError as e:
        raise UsageError(f"the cache {path}: cannot write in {where} ({e.strerror}): set PLUGPULL_CACHE to a "
                         "directory plugpull may write in") from None


def temp_root() -> Path:
    return Path(tempfile.gettempdir())


def make_tempdir(purpose: str) -> Path:
    """A temp dir named after this process, so a later run can tell it is stale."""
    sweep_stale_tempdirs()
    return Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-{purpose}-", dir=temp_root()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def our_tempdirs() -> list[Path]:
    root = temp_root()
    return sorted(p for p in root.iterdir() if _TEMP_RE.match(p.name)) if root.is_dir() else []


def _owner_dead(path: Path, pattern: re.Pattern) -> bool:
    pid = int(pattern.match(path.name).group(1))
    return pid != os.getpid() and not _alive(pid)


def sweep_stale_tempdirs() -> list[Path]:
    """Remove temp dirs left by plugpull processes that died without cleaning up
    (a SIGKILL, a pytest-timeout in thread mode)."""
    removed = []
    for path in our_tempdirs():
        if _owner_dead(path, _TEMP_RE):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
