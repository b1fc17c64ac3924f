"""The archive's package lists, swapped in whole: a refresh never leaves a half state.

    lists = AptLists(cache / "kernels" / "apt")   # the host's archive, read when first needed
    lists.update()                                # fetch into a new generation, then swap it in
    lists.run("apt-cache", "pkgnames", "linux-")  # apt on the live generation

Each fetch is a generation: a folder `gen-*` holding plugpull's apt (its config, its sources
naming the archive it was fetched from, its lists, and the `updated` stamp written last by
`Apt.update`). `live` is a symlink naming the generation in use; a refresh builds a new one
beside it and replaces the symlink only when the fetch is complete, so a fetch that fails
(an unreachable mirror, a kill) leaves the last good lists, their sources and their age in
use. A `live` naming nothing usable counts as no lists: the next refresh fetches anew. The
generation replaced is kept until the next swap, for a reader that was still using it.
Callers hold the kernels' lock around `update`.
"""

import os
import shutil
import tempfile
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from plugpull.kernels.apt import UPDATE_TIMEOUT, Apt, ArchiveUnreachable
from plugpull.kernels.sources import Archive, host_archive, main_archive, parse_sources

LIVE = "live"
PREFIX = "gen-"
OLD_LAYOUT = ("etc", "state", "cache", "log")  # one apt folder, refreshed in place (before generations)


class AptLists:
    """plugpull's apt under `root`, one generation of package lists live at a time."""

    def __init__(self, root: Path, archive: Archive | None = None, types: tuple[str, ...] = ("deb",)):
        self.root = Path(root)
        self._wanted = archive
        self.types = types

    @cached_property
    def wanted(self) -> Archive:
        """The archive a refresh fetches from: the host's, unless given."""
        return self._wanted or host_archive()

    def current(self) -> Apt | None:
        """apt on the live generation, with the archive its lists came from; None without one."""
        try:
            name = os.readlink(self.root / LIVE)
        except OSError:
            return None
        folder = self.root / name
        if "/" in name or not name.startswith(PREFIX) or not (folder / "state" / "updated").is_file():
            return None
        listed = Apt(folder, self._wanted or Archive(""), self.types)
        try:
            text = listed.sources_file.read_text(errors="replace")
            entries = parse_sources(text, deb822=True, kind=self.types[0])
            found = main_archive(entries) if self.types == ("deb",) else [e["uris"][0] for e in entries if e["uris"]]
        except OSError:
            return None
        return replace(listed, archive=replace(listed.archive, uri=found[0])) if found else None

    @property
    def archive(self) -> Archive:
        """The archive of the lists in use; the one a refresh would use when there are none."""
        live = self.current()
        return live.archive if live else self.wanted

    def index_age(self) -> float | None:
        """The age of the live lists; None without lists of the wanted archive: lists fetched
        from another one (`PLUGPULL_DEBIAN_MIRROR` set or changed since) are none, so that a
        refresh fetches the wanted archive's, and a bad address is said, never ignored."""
        live = self.current()
        return live.index_age() if live and live.archive.uri == self.wanted.uri else None

    def update(self, anew: bool = False) -> None:
        """Fetch the lists into a new generation and make it live; `ArchiveUnreachable` (and
        the live lists untouched) when the archive does not give them. The live lists are
        copied in first, so that apt fetches only what changed, unless `anew`."""
        archive = self.wanted
        self.root.mkdir(parents=True, exist_ok=True)
        staged = Apt(Path(tempfile.mkdtemp(prefix=PREFIX, dir=self.root)), archive, self.types)
        try:
            os.chmod(staged.root, 0o755)
            live = self.current()
            staged.setup()
            if not anew and live is not None and live.archive.uri == staged.archive.uri:
                shutil.copytree(live.root / "state" / "lists", staged.root / "state" / "lists",
                                dirs_exist_ok=True)  # apt asks only for what changed
            staged.update()
        except BaseException:
            shutil.rmtree(staged.root, ignore_errors=True)
            raise
        self._swap_in(staged.root)

    def _swap_in(self, folder: Path) -> None:
        link = self.root / LIVE
        previous = os.readlink(link) if link.is_symlink() else None
        if link.exists() and not link.is_symlink():
            shutil.rmtree(link) if link.is_dir() else link.unlink()
        swap = self.root / f".{LIVE}-{os.getpid()}"
        swap.unlink(missing_ok=True)
        os.symlink(folder.name, swap)
        os.replace(swap, link)
        keep = {LIVE, folder.name, previous}
        for path in self.root.iterdir():
            if path.name not in keep and (path.name.startswith((PREFIX, f".{LIVE}-")) or path.name in OLD_LAYOUT):
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()

    def run(self, tool: str, *args: str, cwd: Path | None = None, timeout: float = UPDATE_TIMEOUT):
        """apt on the live lists; `ArchiveUnreachable` when none were fetched."""
        live = self.current()
        if live is None:
            raise ArchiveUnreachable(f"no package lists of Debian's archive fetched yet in {self.root}")
        return live.run(tool, *args, cwd=cwd, timeout=timeout)
