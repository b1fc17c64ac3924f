"""The kernels cache: each Debian kernel unpacked once, with its modules indexed.

A kernel lives in `ROOT/trees/RELEASE_VERSION_DIGEST/`, where DIGEST hashes the packages'
names, versions and SHA256 sums as the archive's signed index gives them (the downloaded
files are checked against the same sums): the same packages give the same folder on any
machine, and a rebuilt package under the same version gives another. Inside: `tree/` (what
`dpkg-deb -x` unpacked, indexed by `depmod -b`) and `kernel.json` (what it is and where its
kernel image and modules are), written last: a folder without it is not a cached kernel.
"""

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import ImageError, ToolMissing
from plugpull.files import atomic_path
from plugpull.guest.image.build import KernelSource, which

MANIFEST = "kernel.json"


@dataclass(frozen=True)
class Package:
    """One .deb as the archive's index describes it."""

    name: str
    version: str
    sha256: str
    size: int
    filename: str


def parse_show(text: str) -> list[Package]:
    """The stanzas of `apt-cache show NAME=VERSION ...`."""
    packages = []
    for stanza in text.strip().split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            if line[:1] not in (" ", "\t") and ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if {"Package", "Version", "SHA256"} <= set(fields):
            packages.append(Package(fields["Package"], fields["Version"], fields["SHA256"],
                                    int(fields.get("Size", 0)), fields.get("Filename", "")))
    return packages


def tree_name(release: str, version: str, packages: list[Package]) -> str:
    """The cache folder's name: the release, the version and a digest of the packages."""
    h = hashlib.sha256()
    for p in sorted(packages, key=lambda p: p.name):
        h.update(f"{p.name} {p.version} {p.sha256}\n".encode())
    return f"{release}_{version.replace(':', '%3a')}_{h.hexdigest()[:12]}"


@dataclass(frozen=True)
class CachedKernel:
    path: Path
    manifest: dict

    @property
    def release(self) -> str:
        return self.manifest["release"]

    @property
    def version(self) -> str:
        return self.manifest["version"]

    @property
    def source(self) -> KernelSource:
        return KernelSource(self.path / self.manifest["kernel"], self.path / self.manifest["modules"])

    def bytes(self) -> int:
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file() and not f.is_symlink())


def load(path: Path) -> CachedKernel | None:
    try:
        return CachedKernel(path, json.loads((path / MANIFEST).read_text()))
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError, KeyError):
        return None


def cached_kernels(root: Path) -> list[CachedKernel]:
    trees = root / "trees"
    found = [load(p) for p in sorted(trees.iterdir())] if trees.is_dir() else []
    return [k for k in found if k is not None]


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_downloads(folder: Path, packages: list[Package]) -> list[Path]:
    """The downloaded .deb of each package, checked against the index's SHA256."""
    debs = []
    for p in packages:
        found = sorted(folder.glob(f"{p.name}_*.deb"))
        if not found:
            raise ImageError(f"apt-get download left no .deb for {p.name} {p.version} in {folder}")
        digest = sha256_of(found[0])
        if digest != p.sha256:
            raise ImageError(f"{found[0].name}: SHA256 {digest} is not the archive's {p.sha256}")
        debs.append(found[0])
    return debs


def locate(tree: Path, release: str) -> tuple[Path, Path]:
    """(kernel image, modules folder) of an unpacked kernel, whichever shape it came in."""
    kernels = [tree / "boot" / f"vmlinuz-{release}",
               *(tree / d / release / n for d in ("usr/lib/modules", "lib/modules") for n in ("vmlinuz", "vmlinuz.unsigned"))]
    modules = [tree / "lib/modules" / release, tree / "usr/lib/modules" / release]
    kernel = next((k for k in kernels if k.is_file()), None)
    folder = next((m for m in modules if m.is_dir() and not m.parent.parent.is_symlink()), None)
    if kernel is None or folder is None:
        raise ImageError(f"the packages of {release} hold no {'kernel image' if kernel is None else 'modules'}")
    return kernel, folder


def _run(argv: list[str], what: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise ImageError(f"{what} failed (exit code {result.returncode}): {' '.join(argv)}\n{result.stderr.strip()}")


def unpack(debs: list[Path], tree: Path, release: str) -> tuple[Path, Path]:
    """Unpack the packages into `tree` and index its modules (modules.dep, modules.alias)
    with depmod; the packages of 7.x ship no index."""
    dpkg_deb, depmod = which("dpkg-deb"), which("depmod")
    if dpkg_deb is None or depmod is None:
        raise ToolMissing("dpkg-deb" if dpkg_deb is None else "depmod", "install the Debian packages dpkg and kmod")
    tree.mkdir(parents=True, exist_ok=True)
    for deb in debs:
        _run([str(dpkg_deb), "-x", str(deb), str(tree)], f"unpacking {deb.name}")
    if not (tree / "lib").exists() and (tree / "usr/lib/modules").is_dir():
        os.symlink("usr/lib", tree / "lib")  # depmod -b looks in BASE/lib/modules
    _run([str(depmod), "-b", str(tree), release], f"depmod for {release}")
    kernel, modules = locate(tree, release)
    if not (modules / "modules.dep").is_file():
        raise ImageError(f"depmod wrote no modules.dep in {modules}")
    return kernel, modules


def store(final: Path, debs: list[Path], release: str, manifest: dict) -> CachedKernel:
    """Unpack into `final` atomically, the manifest written last."""
    final.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(final, directory=True) as staging:
        kernel, modules = unpack(debs, staging / "tree", release)
        doc = {**manifest, "release": release, "kernel": str(kernel.relative_to(staging)),
               "modules": str(modules.relative_to(staging))}
        (staging / MANIFEST).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        os.chmod(staging, 0o755)
    return CachedKernel(final, doc)
