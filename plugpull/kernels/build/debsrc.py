"""Debian's source of a kernel version, through plugpull's own apt, with Debian's patches applied.

Two ways, the first that the archive serves:
- the source package `linux` (`deb-src` lists of a second apt of plugpull's, for the suite
  that offers the kernel only, so that listing kernels never fetches the much larger source
  indexes): `apt-get source --download-only`, checked against the signed lists, then
  `dpkg-source -x`, which applies `debian/patches` in order;
- the binary package `linux-source-SERIES` of the same version, built from that source
  package: its `/usr/src/linux-source-SERIES.tar.xz` is the tree with Debian's patches
  already applied (an archive or mirror that serves binaries but not sources still has it).
The unpacked tree is kept, read-only to plugpull, under `sources/linux_VERSION`; the
downloads go once it is complete.
"""

import logging
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from plugpull.errors import InfraError, ToolMissing
from plugpull.kernels.apt import ArchiveUnreachable
from plugpull.kernels.lists import AptLists
from plugpull.kernels.resolve import kernels_lock
from plugpull.prune import Kind, register
from plugpull.kernels.versions import series_of

log = logging.getLogger(__name__)

PACKAGE = "linux"
UNPACK_TIMEOUT = 3600


def source_lists(kernels, suites: tuple[str, ...]) -> AptLists:
    """plugpull's apt for the source packages of `suites`, in the kernels' cache."""
    archive = replace(kernels.apt.archive, suites=tuple(suites))
    return AptLists(kernels.root / "apt-src" / "-".join(suites), archive, types=("deb-src",))


def source_path(kernels, version: str) -> Path:
    return kernels.root / "sources" / f"{PACKAGE}_{version.replace(':', '%')}"


def source_tree(kernels, version: str, suites: tuple[str, ...], progress=print) -> tuple[Path, dict]:
    """The unpacked source of `linux` VERSION and how it came ({} when cached), fetched and
    unpacked once, under the kernels' lock."""
    final = source_path(kernels, version)
    if (final / "Makefile").is_file():
        return final, {}
    with kernels._locked():
        if (final / "Makefile").is_file():
            return final, {}
        work = final.parent / f".{final.name}.tmp"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            how = _fetch(kernels, version, suites, work, progress)
            (work / "tree").rename(final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return final, how


def _fetch(kernels, version: str, suites, work: Path, progress) -> dict:
    started = time.monotonic()
    try:
        how = _from_source_package(kernels, version, suites, work, progress)
    except ArchiveUnreachable as e:
        log.warning("%s; taking linux-source-%s %s instead", e, series_of(version), version)
        for path in work.iterdir():
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        how = _from_linux_source(kernels, version, work, progress)
    how["seconds"] = round(time.monotonic() - started, 1)
    return how


def _from_source_package(kernels, version: str, suites, work: Path, progress) -> dict:
    lists = source_lists(kernels, suites)
    age = lists.index_age()
    if age is None or age > kernels.max_age:
        progress(f"fetching the source lists of {', '.join(suites)}")
        lists.update()
    progress(f"fetching the source package {PACKAGE} {version}")
    started = time.monotonic()
    result = lists.run("apt-get", "-q", "source", "--download-only", f"{PACKAGE}={version}", cwd=work,
                       timeout=UNPACK_TIMEOUT)
    if result.returncode != 0:
        raise ArchiveUnreachable(f"apt-get source {PACKAGE}={version} failed: "
                                 f"{(result.stderr.strip().splitlines() or ['?'])[-1]}")
    fetched = time.monotonic() - started
    size = sum(p.stat().st_size for p in work.iterdir())
    dsc = next(work.glob("*.dsc"))
    progress(f"unpacking {dsc.name} with Debian's patches ({size / 2**20:.0f} MiB fetched in {fetched:.0f} s)")
    run_tool(["dpkg-source", "--no-check", "-x", dsc.name, str(work / "tree")], work, "dpkg-dev")
    return {"from": f"{PACKAGE} {version} (source package)", "bytes": size, "fetch_seconds": round(fetched, 1)}


def _from_linux_source(kernels, version: str, work: Path, progress) -> dict:
    name = f"linux-source-{series_of(version)}"
    progress(f"fetching {name} {version}")
    started = time.monotonic()
    result = kernels.apt.run("apt-get", "-q", "download", f"{name}={version}", cwd=work, timeout=UNPACK_TIMEOUT)
    debs = list(work.glob(f"{name}_*.deb"))
    if result.returncode != 0 or len(debs) != 1:
        raise ArchiveUnreachable(f"neither the source package {PACKAGE} nor {name} {version} could be fetched: "
                                 f"{(result.stderr.strip().splitlines() or ['?'])[-1]}")
    fetched = time.monotonic() - started
    size = debs[0].stat().st_size
    progress(f"unpacking {debs[0].name} ({size / 2**20:.0f} MiB fetched in {fetched:.0f} s)")
    run_tool(["dpkg-deb", "-x", debs[0].name, "deb"], work, "dpkg")
    debs[0].unlink()
    tarball = work / "deb" / "usr" / "src" / f"{name}.tar.xz"
    if not tarball.is_file():
        raise InfraError(f"{name} {version} holds no usr/src/{tarball.name}")
    run_tool(["tar", "-xf", str(tarball), "-C", str(work)], work, "tar")
    shutil.rmtree(work / "deb")
    (work / name).rename(work / "tree")
    return {"from": f"{name} {version} (Debian's patches applied)", "bytes": size, "fetch_seconds": round(fetched, 1)}


def run_tool(argv: list[str], cwd: Path, package: str) -> None:
    try:
        result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=UNPACK_TIMEOUT)
    except FileNotFoundError:
        raise ToolMissing(argv[0], f"install the Debian package {package}") from None
    if result.returncode != 0:
        raise InfraError(f"{' '.join(argv[:3])} failed: {(result.stderr.strip().splitlines() or ['?'])[-1]}")


register(Kind("kernels/sources", locks=kernels_lock))
