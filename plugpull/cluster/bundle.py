"""A record as one content-addressed blob, shipped to each worker once.

A bundle holds the record's record.json, base images and write logs: a JSON header (each
file's name, size and data extents), then the extents' bytes, all zlib-compressed. Holes
stay holes: a 512 MiB base image weighs what its data weighs. Its name is the sha256 of the
bundle's bytes; a worker checks it before unpacking (`install`), so a blob damaged on the
way, or one that is not what the task names, is refused (`CorruptRecord`).

The same packing carries a hunt's failing artifacts back from a worker (`pack_tree`,
`unpack_tree`): files by their relative paths, never a path outside the directory unpacked to.
"""

import hashlib
import json
import os
import shutil
import threading
import zlib
from pathlib import Path
from typing import NamedTuple

from plugpull.crash.record import Record
from plugpull.errors import InfraError
from plugpull.prune import mark_used

MAGIC = b"plugpull-record-1\n"
TREE_MAGIC = b"plugpull-tree-1\n"
CHUNK = 1 << 20


class CorruptRecord(InfraError):
    """A record bundle whose bytes do not hash to the digest it was sent under."""


class Bundle(NamedTuple):
    digest: str  # sha256 hex of `data`
    data: bytes


def record_files(rec: Record) -> list[Path]:
    return [rec.dir / "record.json", *rec.bases, *rec.logs]


def data_extents(fd: int, size: int) -> list[tuple[int, int]]:
    """(offset, length) of every run of data in the file; holes are left out."""
    out, pos = [], 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: only a hole is left
            break
        end = os.lseek(fd, start, os.SEEK_HOLE)
        out.append((start, end - start))
        pos = end
    return out


def pack(rec: Record) -> Bundle:
    """The record's files as one bundle, named by its sha256."""
    data = _packed(MAGIC, [(path.name, path) for path in record_files(rec)])
    return Bundle(hashlib.sha256(data).hexdigest(), data)


def pack_tree(root: Path) -> bytes:
    """Every regular file under `root`, by its path relative to it, as one blob (holes stay
    holes): a failing workload's artifacts on their way from a worker (`unpack_tree`)."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    return _packed(TREE_MAGIC, [(str(p.relative_to(root)), p) for p in files])


def _packed(magic: bytes, files: list[tuple[str, Path]]) -> bytes:
    header, squeeze = [], zlib.compressobj(1)
    body = []
    for name, path in files:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            extents = data_extents(f.fileno(), size)
            header.append({"name": name, "size": size, "extents": extents})
            for start, length in extents:
                for offset in range(start, start + length, CHUNK):
                    body.append(squeeze.compress(os.pread(f.fileno(), min(CHUNK, start + length - offset), offset)))
    head = json.dumps(header).encode()
    return magic + len(head).to_bytes(8, "little") + head + b"".join(body) + squeeze.flush()


def verify(digest: str, data: bytes) -> None:
    """Refuse bytes that do not hash to `digest`."""
    got = hashlib.sha256(data).hexdigest()
    if got != digest:
        raise CorruptRecord(f"record bundle refused: its bytes hash to {got[:16]}, "
                            f"not to the {digest[:16]} it was sent as")


def unpack(data: bytes, dest: Path) -> None:
    """Write a verified bundle's files into `dest` (sparse)."""
    for name, size, pieces in _unpacked(MAGIC, data, "record bundle"):
        _write_sparse(dest / Path(name).name, size, pieces)  # never a path outside dest


def unpack_tree(data: bytes, dest: Path) -> None:
    """Write the files of a `pack_tree` blob under `dest`, which must not exist yet; a name
    that would land outside it is refused (`CorruptRecord`)."""
    dest.mkdir(parents=True)
    for name, size, pieces in _unpacked(TREE_MAGIC, data, "artifact blob"):
        relative = Path(name)
        if relative.is_absolute() or not relative.parts or ".." in relative.parts:
            raise CorruptRecord(f"artifact blob names {name!r}: not a path inside its directory")
        (dest / relative).parent.mkdir(parents=True, exist_ok=True)
        _write_sparse(dest / relative, size, pieces)


def _unpacked(magic: bytes, data: bytes, what: str):
    """(name, size, [(offset, bytes)]) of each file in a blob."""
    if not data.startswith(magic):
        raise CorruptRecord(f"not a plugpull {what}")
    at = len(magic)
    length = int.from_bytes(data[at:at + 8], "little")
    header = json.loads(data[at + 8:at + 8 + length])
    body = zlib.decompress(data[at + 8 + length:])
    pos = 0
    for item in header:
        pieces = []
        for start, size in item["extents"]:
            pieces.append((start, body[pos:pos + size]))
            pos += size
        yield item["name"], item["size"], pieces
    if pos != len(body):
        raise CorruptRecord(f"{what} holds {len(body) - pos} bytes its header does not place")


def _write_sparse(path: Path, size: int, pieces: list[tuple[int, bytes]]) -> None:
    with open(path, "wb") as f:
        f.truncate(size)
        for start, piece in pieces:
            os.pwrite(f.fileno(), piece, start)


def install(cache: Path, digest: str, data: bytes) -> Path:
    """The record's directory in `cache` (`records/DIGEST`), unpacked once after its digest
    is checked; a later call with the same digest finds it there. Workers that share the
    cache (threads, processes) unpack into a directory each; the first to finish puts its
    own in place, and the others find it there."""
    where = cache / "records" / digest
    if (where / "record.json").is_file():
        mark_used(where / "record.json")
        return where
    verify(digest, data)
    tmp = where.with_name(f".{digest}.{os.getpid()}.{threading.get_ident()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        unpack(data, tmp)
        os.replace(tmp, where)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if (where / "record.json").is_file():  # another worker's copy went in first
            return where
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return where
