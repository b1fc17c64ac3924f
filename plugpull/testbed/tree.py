"""The trees the tree workloads extract, copy and remove, as uncompressed tars that the guest
reads from a read-only payload disk.

The seeds untar linux-2.6.27 (seed 000) and copy 28,566 files in 2,090 directories, 300 MB
(seed 002). By default plugpull generates a tree of that shape (files per directory, size
distribution, depth) from a seed; `files` scales it down for CI. The other source is the real
kernel tree of Debian's linux-source-6.1 package, unpacked on the host once (decompressing it
in the guest under TCG would measure the CPU, not the disk).
"""

import functools
import hashlib
import io
import json
import lzma
import random
import tarfile
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import ToolMissing
from plugpull.files import atomic_path, atomic_write_json
from plugpull.paths import cache_dir
from plugpull.locks import exclusive
from plugpull.prune import Kind, mark_used, register

KERNEL_FILES = 28566
KERNEL_DIRS = 2090
KERNEL_BYTES = 300 * 1000 * 1000
ROOT = "tree"
FORMAT_VERSION = "1"


@dataclass(frozen=True)
class TreeShape:
    files: int = KERNEL_FILES
    seed: int = 1

    @property
    def dirs(self) -> int:
        return max(1, round(self.files * KERNEL_DIRS / KERNEL_FILES))

    @property
    def total_bytes(self) -> int:
        return self.files * KERNEL_BYTES // KERNEL_FILES

    def key(self) -> str:
        return hashlib.sha256(f"{FORMAT_VERSION} {self.files} {self.seed}".encode()).hexdigest()[:16]


def _directories(shape: TreeShape, rng: random.Random) -> list[str]:
    """Directory paths forming a tree of depth <= 5, most of them 2-4 levels down."""
    dirs = [ROOT]
    while len(dirs) < shape.dirs:
        parent = rng.choice(dirs[-64:] if rng.random() < 0.6 else dirs)
        if parent.count("/") >= 5:
            continue
        dirs.append(f"{parent}/d{len(dirs):04d}")
    return dirs


def _sizes(shape: TreeShape, rng: random.Random) -> list[int]:
    """Log-normal sizes (many small files, a few large ones) scaled to the total."""
    raw = [rng.lognormvariate(8.6, 1.2) for _ in range(shape.files)]
    scale = shape.total_bytes / sum(raw)
    return [max(1, min(int(r * scale), 2 << 20)) for r in raw]


def _contents(rng: random.Random):
    """Text-like bytes from a pool of seeded blocks: cheap to make, not trivially compressible."""
    alphabet = b"abcdefghijklmnopqrstuvwxyz_ \n\t(){};=*+-0123456789"
    pool = [bytes(rng.choice(alphabet) for _ in range(4096)) for _ in range(32)]

    def content(path: str, size: int) -> bytes:
        head = f"/* {path} */\n".encode()
        out = bytearray(head)
        local = random.Random(path)
        while len(out) < size:
            out += pool[local.randrange(len(pool))]
        return bytes(out[:size])

    return content


def generate(shape: TreeShape, out: Path) -> tuple[dict, int]:
    """Write the tree as a tar to `out`; returns the manifest {path: sha256} and its bytes."""
    rng = random.Random(f"tree {shape.seed}")
    dirs = _directories(shape, rng)
    sizes = _sizes(shape, rng)
    content = _contents(rng)
    manifest = {}
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as tar:
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 1_200_000_000
            tar.addfile(info)
        for i, size in enumerate(sizes):
            path = f"{dirs[i % len(dirs)]}/f{i:05d}.c"
            data = content(path, size)
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 1_200_000_000
            tar.addfile(info, io.BytesIO(data))
            manifest[path] = hashlib.sha256(data).hexdigest()
    return manifest, sum(sizes)


DEBIAN_SOURCE = Path("/usr/src/linux-source-6.1.tar.xz")


@dataclass(frozen=True)
class Payload:
    tar: Path
    manifest: dict
    bytes: int
    root: str = ROOT


def _cached_tar(root: Path | None, stem: str, write) -> Payload:
    """`stem`.tar and its metadata in the payload cache, made once under a lock. `write(tmp)`
    writes the tar and returns {"manifest", "bytes"[, "root"]}; the tar is padded to whole
    sectors, since the guest reads it as a disk."""
    root = root or cache_dir() / "payloads"
    root.mkdir(parents=True, exist_ok=True)
    tar, meta = root / f"{stem}.tar", root / f"{stem}.json"
    with exclusive(root / ".lock"):
        if not meta.is_file():
            with atomic_path(tar) as tmp:
                doc = write(tmp)
                with open(tmp, "ab") as f:
                    f.write(bytes(-tmp.stat().st_size % 512))
            atomic_write_json(meta, doc, indent=None)
    mark_used(meta)
    doc = json.loads(meta.read_text())
    return Payload(tar, doc["manifest"], doc["bytes"], doc.get("root", ROOT))


def _unpack_xz(source: Path, out: Path) -> dict:
    with lzma.open(source) as xz, open(out, "wb") as dst:
        while chunk := xz.read(1 << 20):
            dst.write(chunk)
    manifest, total, top = {}, 0, None
    with tarfile.open(out) as t:
        for member in t:
            top = top or member.name.split("/")[0]
            if member.isfile():
                digest = hashlib.sha256()
                f = t.extractfile(member)
                while block := f.read(1 << 20):
                    digest.update(block)
                manifest[member.name] = digest.hexdigest()
                total += member.size
    return {"manifest": manifest, "bytes": total, "root": top}


@functools.lru_cache(maxsize=4)
def debian_payload(source: Path = DEBIAN_SOURCE, root: Path | None = None) -> Payload:
    """Debian's kernel source tree, unpacked to a plain tar once and cached with its manifest."""
    if not source.is_file():
        raise ToolMissing(str(source), "install the Debian package linux-source-6.1")
    st = source.stat()
    key = hashlib.sha256(f"{FORMAT_VERSION} {source} {st.st_size} {st.st_mtime_ns}".encode()).hexdigest()[:16]
    return _cached_tar(root, f"debian-{key}", lambda tmp: _unpack_xz(source, tmp))


@functools.lru_cache(maxsize=8)
def payload(shape: TreeShape, root: Path | None = None) -> Payload:
    """The synthetic tree's tar and manifest, generated once and cached."""

    def write(tmp: Path) -> dict:
        manifest, total = generate(shape, tmp)
        return {"manifest": manifest, "bytes": total}

    return _cached_tar(root, f"tree-{shape.key()}", write)


def _payload_entry(entry: Path) -> bool:
    return entry.suffix != ".tar"  # a tar goes with its .json


def _payload_tar(entry: Path) -> list[Path]:
    return [entry.with_suffix(".tar")] if entry.suffix == ".json" else []


register(Kind("payloads", locks=lambda folder: [folder / ".lock"], entry=_payload_entry, companions=_payload_tar))
