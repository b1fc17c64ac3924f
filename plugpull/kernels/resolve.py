"""From `debian:VERSION` to a kernel and its modules tree on disk.

    kernels = Kernels()                       # plugpull's apt under cache_dir()/kernels
    got = kernels.resolve("debian:6.12")      # the newest 6.12.x: fetched, unpacked, indexed once
    build_image(got.source)                   # the guest image for it

The package lists are fetched when older than a day; when the archive cannot be reached,
older lists (or, without any, the cached kernels) still resolve what they can.
"""

import logging
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.errors import ImageError, InfraError
from plugpull.guest.image.build import KernelSource
from plugpull.kernels.apt import INDEX_MAX_AGE, ArchiveUnreachable
from plugpull.kernels.lists import AptLists
from plugpull.kernels.offers import Offer, choose, kernel_names, offers_from, parse_madison
from plugpull.kernels.sources import Archive
from plugpull.kernels.naming import DebianKernel, parse_debian
from plugpull.kernels.store import MANIFEST, CachedKernel, Package, cached_kernels, check_downloads, load, \
    parse_show, store, tree_name
from plugpull.kernels.versions import version_key
from plugpull.paths import cache_dir
from plugpull.locks import exclusive
from plugpull.prune import Kind, mark_used, register

log = logging.getLogger(__name__)


class ListsUnreadable(InfraError):
    """apt cannot read the fetched package lists (a cache holding junk)."""


@dataclass(frozen=True)
class Resolved:
    """A Debian kernel ready to boot: what was asked, what it is, and what it took."""

    spec: DebianKernel
    kernel: CachedKernel
    downloaded: bool
    seconds: dict = field(default_factory=dict)  # resolve (lists and choice), fetch, unpack

    @property
    def source(self) -> KernelSource:
        return self.kernel.source


class Kernels:
    """Debian's kernels through plugpull's own apt, cached under `root`."""

    def __init__(self, root: Path | None = None, archive: Archive | None = None,
                 max_age: float = INDEX_MAX_AGE, apt: AptLists | None = None):
        self.root = Path(root or cache_dir() / "kernels")
        self._archive = archive
        self._apt = apt
        self.max_age = max_age

    @property
    def apt(self) -> AptLists:
        """plugpull's apt and its package lists."""
        if self._apt is None:
            self._apt = AptLists(self.root / "apt", self._archive)
        return self._apt

    @property
    def where(self) -> str:
        a = self.apt.archive
        return f"{a.uri} ({', '.join(a.suites)})"

    @contextmanager
    def _locked(self):
        self.root.mkdir(parents=True, exist_ok=True)
        with exclusive(self.root / ".lock"):
            yield

    def refresh(self, force: bool = False, anew: bool = False) -> bool:
        """Fetch the package lists if they are older than `max_age` (or `force`; `anew`:
        every list, not only what changed); True when fetched. Raises `ArchiveUnreachable`
        only when no lists were ever fetched."""
        apt = self.apt
        age = apt.index_age()
        if not force and age is not None and age < self.max_age:
            return False
        apt.archive  # an archive known (or a UsageError) before anything is made
        with self._locked():
            now = apt.index_age()  # another process may have fetched them meanwhile
            if not force and now is not None and now < self.max_age:
                return False
            try:
                apt.update(anew=True) if anew else apt.update()
            except ArchiveUnreachable as e:
                if age is None:
                    raise
                log.warning("%s; using the package lists of %.0f h ago", e, age / 3600)
                return False
        return True

    def offers(self) -> list[Offer]:
        """Every kernel the fetched package lists offer (call `refresh` first). Lists that
        apt cannot read, or that offer no kernel at all (the archive always has some: files
        gone from the cache), are fetched again, once."""
        try:
            found = self._read_offers()
            if found:
                return found
            log.warning("the package lists in %s offer no kernel; fetching them again", self.apt.root)
        except ListsUnreadable as e:
            log.warning("%s; fetching them again", e)
        self.refresh(force=True, anew=True)
        return self._read_offers()

    def _read_offers(self) -> list[Offer]:
        names = self._apt_cache("pkgnames", "linux-").split()
        wanted = kernel_names(names)
        return offers_from(parse_madison(self._apt_cache("madison", *wanted))) if wanted else []

    def packages(self, offer: Offer) -> list[Package]:
        text = self._apt_cache("show", "--no-all-versions", *(f"{n}={offer.version}" for n in offer.packages))
        found = parse_show(text)
        if sorted(p.name for p in found) != sorted(offer.packages):
            raise ImageError(f"apt-cache show gave {[p.name for p in found]} for {list(offer.packages)}")
        return found

    def _apt_cache(self, *args: str) -> str:
        result = self.apt.run("apt-cache", *args)
        if result.returncode != 0:
            first = (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[0]
            raise ListsUnreadable(f"apt-cache {args[0]} cannot read the package lists in {self.apt.root}: {first}")
        return result.stdout

    def cached(self) -> list[CachedKernel]:
        return cached_kernels(self.root)

    def choose(self, spec: DebianKernel | str, flag: str = "--kernel") -> Offer:
        """The offer a spec names, the package lists fetched first if stale: a `UsageError`
        naming the nearest offered (and `flag`, what gave the spec) when none matches,
        nothing downloaded but the lists."""
        spec = parse_debian(spec, flag) if isinstance(spec, str) else spec
        self.refresh()
        return choose(spec, self.offers(), self.where, flag)

    def resolve(self, spec: DebianKernel | str) -> Resolved:
        """The kernel a spec names, fetched and unpacked unless cached."""
        spec = parse_debian(spec) if isinstance(spec, str) else spec
        started = time.monotonic()
        try:
            offer = self.choose(spec)
        except ArchiveUnreachable:
            offline = self._newest_cached(spec)
            if offline is None:
                raise
            log.warning("Debian's archive cannot be reached; %s is the cached %s", spec, offline.version)
            return Resolved(spec, offline, False, {"resolve": time.monotonic() - started})
        packages = self.packages(offer)
        final = self.root / "trees" / tree_name(offer.release, offer.version, packages)
        seconds = {"resolve": time.monotonic() - started}
        cached = load(final)
        if cached is not None:
            mark_used(final / MANIFEST)
            return Resolved(spec, cached, False, seconds)
        with self._locked():
            cached = load(final)
            if cached is not None:
                return Resolved(spec, cached, False, seconds)
            kernel = self._fetch(offer, packages, final, seconds)
        return Resolved(spec, kernel, True, seconds)

    def _newest_cached(self, spec: DebianKernel) -> CachedKernel | None:
        matching = [k for k in self.cached() if spec.matches(k.release, k.version)]
        return max(matching, key=lambda k: version_key(k.version), default=None)

    def _fetch(self, offer: Offer, packages: list[Package], final: Path, seconds: dict) -> CachedKernel:
        log.info("fetching %s (%s, %s): %s, %.0f MiB", offer.release, offer.version, offer.suite,
                 " ".join(offer.packages), sum(p.size for p in packages) / 2**20)
        sweep_unfinished(self.root)
        downloads = self.root / "downloads" / final.name
        downloads.mkdir(parents=True)
        try:
            started = time.monotonic()
            result = self.apt.run("apt-get", "-q", "download", *(f"{p.name}={p.version}" for p in packages),
                                  cwd=downloads)
            if result.returncode != 0:
                raise ArchiveUnreachable(f"apt-get download from {self.apt.archive.uri} failed: "
                                         f"{(result.stderr.strip().splitlines() or ['?'])[-1]}")
            debs = check_downloads(downloads, packages)
            seconds["fetch"] = time.monotonic() - started
            started = time.monotonic()
            manifest = {"version": offer.version, "suites": list(offer.suites), "shape": offer.shape,
                        "packages": {p.name: {"version": p.version, "sha256": p.sha256, "size": p.size}
                                     for p in packages}}
            kernel = store(final, debs, offer.release, manifest)
            seconds["unpack"] = time.monotonic() - started
        finally:
            shutil.rmtree(downloads, ignore_errors=True)
        log.info("%s ready in %.1f s (fetch %.1f s, unpack and depmod %.1f s)", offer.release,
                 sum(seconds.get(k, 0) for k in ("resolve", "fetch", "unpack")), seconds["fetch"], seconds["unpack"])
        return kernel


def sweep_unfinished(root: Path) -> list[Path]:
    """Remove what a fetch killed midway left (its downloads, its half-unpacked tree). Called
    under the kernels' lock, which every fetch holds: nothing else is writing them."""
    left = [*(root / "downloads").glob("*"), *(root / "trees").glob(".*.tmp")]
    for path in left:
        shutil.rmtree(path, ignore_errors=True)
    return left


def kernels_lock(folder: Path) -> list[Path]:
    """The lock a fetch holds over the kernels' cache (`Kernels`): its folders are left alone
    while it is held."""
    return [folder.parent / ".lock"]


register(Kind("kernels/trees", locks=kernels_lock))
register(Kind("kernels/downloads", locks=kernels_lock))
