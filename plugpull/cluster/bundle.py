"""A record as one content-addressed blob, shipped to each worker once.

A bundle holds the record's record.json, base images and write logs: a JSON header (each
file's name, size and data extents), then the extents' bytes, all zlib-compressed. Holes
stay holes: a 512 MiB base image weighs what its data weighs. Its name is the sha256 of the
bundle's bytes; a worker checks it before unpacking (`install`), so a blob damaged on the
way, or one that is not what the task names, is refused (`CorruptRecord`).
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

MAGIC = b"plugpull-record-1\n"
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
    header, squeeze = [], zlib.compressobj(1)
    body = []
    for path in record_files(rec):
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            extents = data_extents(f.fileno(), size)
            header.append({"name": path.name, "size": size, "extents": extents})
            for start, length in extents:
                for offset in range(start, start + length, CHUNK):
                    body.append(squeeze.compress(os.pread(f.fileno(), min(CHUNK, start + length - offset), offset)))
    head = json.dumps(header).encode()
    data = MAGIC + len(head).to_bytes(8, "little") + head + b"".join(body) + squeeze.flush()
    return Bundle(hashlib.sha256(data).hexdigest(), data)


def verify(digest: str, data: bytes) -> None:
    """Refuse bytes that do not hash to `digest`."""
    got = hashlib.sha256(data).hexdigest()
    if got != digest:
        raise CorruptRecord(f"record bundle refused: its bytes hash to {got[:16]}, "
                            f"not to the {digest[:16]} it was sent as")


def unpack(data: bytes, dest: Path) -> None:
    """Write a verified bundle's files into `dest` (sparse)."""
    if not data.startswith(MAGIC):
        raise CorruptRecord("not a plugpull record bundle")
    at = len(MAGIC)
    length = int.from_bytes(data[at:at + 8], "little")
    header = json.loads(data[at + 8:at + 8 + length])
    body = zlib.decompress(data[at + 8 + length:])
    pos = 0
    for item in header:
        name = Path(item["name"]).name  # never a path outside dest
        with open(dest / name, "wb") as f:
            f.truncate(item["size"])
            for start, size in item["extents"]:
                os.pwrite(f.fileno(), body[pos:pos + size], start)
                pos += size
    if pos != len(body):
        raise CorruptRecord(f"record bundle holds {len(body) - pos} bytes its header does not place")


def install(cache: Path, digest: str, data: bytes) -> Path:
    """The record's directory in `cache` (`records/DIGEST`), unpacked once after its digest
    is checked; a later call with the same digest finds it there. Workers that share the
    cache (threads, processes) unpack into a directory each; the first to finish puts its
    own in place, and the others find it there."""
    where = cache / "records" / digest
    if (where / "record.json").is_file():
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
