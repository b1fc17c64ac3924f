"""Built kernels in the cache, by key and by name.

    builds/entries/KEY/      bzImage, lib/modules/RELEASE (depmod run), config, manifest.json
    builds/names/NAME        a link to entries/KEY: what `--kernel build:NAME` boots
    builds/logs/KEY.log      the build log, kept whether the build worked or not
    builds/work/SOURCE/      a source's work tree and objects, kept between builds
    builds/ccache/           ccache's objects, shared by every build (and bisect step); not in any key

KEY is the digest of what the build is made of: the source (a Debian version, or a user's tree:
its git HEAD and a digest of its changes), the patches' contents in order (each marked when it
is applied in reverse), and the config fragments' text. Not the compiler's wrapper: a build
through ccache is the same build. An entry appears whole (renamed into place) or not at all.
"""

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.guest.image.build import KernelSource
from plugpull.kernels.build.buildspec import BUILD, check_name
from plugpull.prune import Kind, mark_used, register

KEY_FORMAT = 1


def build_key(source: dict, patches: list[bytes], fragment: str, reverse: list[bool] = ()) -> str:
    """The key of a build; a patch applied in reverse (`--revert`) counts as another patch."""
    reverse = list(reverse) or [False] * len(patches)
    digests = [("R:" if back else "") + hashlib.sha256(p).hexdigest() for p, back in zip(patches, reverse)]
    doc = {"format": KEY_FORMAT, "source": source, "patches": digests, "config": fragment}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Built:
    """One built kernel: its entry folder and manifest."""

    entry: Path
    manifest: dict

    @property
    def key(self) -> str:
        return self.entry.name

    @property
    def release(self) -> str:
        return self.manifest["release"]

    @property
    def source(self) -> KernelSource:
        return KernelSource(self.entry / "bzImage", self.entry / "lib" / "modules" / self.release)

    def bytes(self) -> int:
        return sum(f.stat().st_size for f in self.entry.rglob("*") if f.is_file() and not f.is_symlink())


class BuildStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def entry(self, key: str) -> Path:
        return self.root / "entries" / key

    def name_link(self, name: str) -> Path:
        return self.root / "names" / check_name(name)

    @property
    def ccache(self) -> Path:
        return self.root / "ccache"

    def log(self, key: str) -> Path:
        return self.root / "logs" / f"{key}.log"

    def load(self, key: str) -> Built | None:
        try:
            manifest = json.loads((self.entry(key) / "manifest.json").read_text())
        except (OSError, ValueError):
            return None
        built = Built(self.entry(key), manifest)
        return built if built.source.kernel.is_file() and built.source.modules_dir.is_dir() else None

    def named(self, name: str) -> Built | None:
        try:
            key = os.readlink(self.name_link(name)).rsplit("/", 1)[-1]
        except OSError:
            return None
        return self.load(key)

    def check_name_free(self, name: str, key: str) -> None:
        """A name may be given again only to the same build."""
        link = self.name_link(name)
        if os.path.lexists(link) and os.readlink(link).rsplit("/", 1)[-1] != key and self.named(name) is not None:
            raise UsageError(f"--name {name}: already names another build ({BUILD}{name}, "
                             f"{self.named(name).manifest.get('spec', '?')}): choose another name")

    def name(self, name: str, key: str) -> None:
        self.check_name_free(name, key)
        link = self.name_link(name)
        link.parent.mkdir(parents=True, exist_ok=True)
        fresh = link.with_name(f".{name}.{os.getpid()}")
        fresh.unlink(missing_ok=True)
        os.symlink(f"../entries/{key}", fresh)
        os.replace(fresh, link)

    def names(self) -> list[tuple[str, Built]]:
        folder = self.root / "names"
        found = []
        for link in sorted(folder.iterdir()) if folder.is_dir() else []:
            if not link.name.startswith("."):
                built = self.named(link.name)
                if built is not None:
                    found.append((link.name, built))
        return found

    def find(self, name: str) -> KernelSource:
        """`build:NAME`'s kernel; a one-line `UsageError` naming the builds there are when none is."""
        built = self.named(name)
        if built is None:
            there = ", ".join(f"{BUILD}{n}" for n, _ in self.names()) or "none yet"
            raise UsageError(f"--kernel {BUILD}{name}: no such build (built here: {there}; "
                             f"plugpull kernels build SPEC --name {name})")
        mark_used(built.entry / "manifest.json")
        return built.source


def _build_locks(folder: Path) -> list[Path]:
    work = folder.parent / "work"
    return sorted(work.glob("*/.lock")) if work.is_dir() and not work.is_symlink() else []


def _build_companions(entry: Path) -> list[Path]:
    """A built kernel's log and the names that point at it."""
    builds = entry.parent.parent
    names = builds / "names"
    links = [n for n in names.iterdir() if n.is_symlink() and os.readlink(n).rsplit("/", 1)[-1] == entry.name] \
        if names.is_dir() and not names.is_symlink() else []
    return [builds / "logs" / f"{entry.name}.log", *links]


def _ccache_entry(path: Path) -> bool:
    """ccache's own folders (0-f, each written when a build stores an object there); not its
    config and statistics."""
    return path.is_dir() and len(path.name) == 1


register(Kind("kernels/builds/entries", locks=_build_locks, companions=_build_companions))
register(Kind("kernels/builds/work", entry_lock=".lock"))
register(Kind("kernels/builds/ccache", locks=_build_locks, entry=_ccache_entry))
