"""Workloads that run in the guest and acknowledge each operation they believe durable.

A workload is a shell script for the guest's busybox (it writes `ack ID` lines to fd 4, the
ack port, only after fsync returned) plus the host-side knowledge of what each ack promises:
`lost(required_ids, files)` returns the acks whose data is not intact in a crash state.
Content is a pure function of (seed, id), so the host regenerates it instead of storing it.
"""

import hashlib
from dataclasses import dataclass, field

from plugpull.errors import UsageError

DIR = "pp"
ACK_PORT = "/dev/plugpull-ack"


def _line(kind: str, seed: int, ident: int) -> bytes:
    return f"plugpull {kind} seed={seed} id={ident}".encode()


def repeated(line: bytes, size: int) -> bytes:
    """What `yes LINE | head -c SIZE` writes."""
    unit = line + b"\n"
    return (unit * (size // len(unit) + 1))[:size]


@dataclass(frozen=True)
class Lost:
    ack: int
    reason: str


@dataclass(frozen=True)
class FsyncFiles:
    """Create files of 1-16 KiB one by one; after each, fsync the file and its directory."""

    count: int = 40
    seed: int = 1
    name: str = field(default="fsync-files", init=False)

    def path(self, ident: int) -> str:
        return f"{DIR}/f{ident:05d}"

    def size(self, ident: int) -> int:
        digest = hashlib.sha256(f"{self.seed}:{ident}".encode()).digest()
        return 1024 + int.from_bytes(digest[:4], "little") % (15 * 1024)

    def content(self, ident: int) -> bytes:
        return repeated(_line(self.name, self.seed, ident), self.size(ident))

    def script(self, mountpoint: str, ack: str = ACK_PORT) -> str:
        lines = [f"cd {mountpoint}/{DIR} || exit 1", f"exec 4>{ack}"]
        for i in range(1, self.count + 1):
            name = self.path(i).split("/")[-1]
            lines.append(f"yes '{_line(self.name, self.seed, i).decode()}' | head -c {self.size(i)} > {name}"
                         f" && sync {name} . && echo 'ack {i}' >&4 || exit 2")
        return "\n".join(lines) + "\n"

    def lost(self, required: list[int], files: dict[str, bytes]) -> list[Lost]:
        out = []
        for i in required:
            got = files.get(self.path(i))
            if got is None:
                out.append(Lost(i, f"{self.path(i)} is missing"))
            elif got != self.content(i):
                out.append(Lost(i, f"{self.path(i)} has wrong content ({len(got)} bytes, "
                                   f"expected {self.size(i)})"))
        return out

    def params(self) -> dict:
        return {"count": self.count, "seed": self.seed}


@dataclass(frozen=True)
class FsyncAppend:
    """Append fixed-size records to one file, fsync after each: ack N promises records 1..N."""

    count: int = 100
    seed: int = 1
    record_size: int = 128
    name: str = field(default="fsync-append", init=False)

    path = f"{DIR}/journal"

    def record(self, ident: int) -> bytes:
        return repeated(_line(self.name, self.seed, ident), self.record_size - 1) + b"\n"

    def script(self, mountpoint: str, ack: str = ACK_PORT) -> str:
        lines = [f"cd {mountpoint}/{DIR} || exit 1", f"exec 4>{ack}", ": > journal && sync journal . || exit 2"]
        for i in range(1, self.count + 1):
            lines.append(f"yes '{_line(self.name, self.seed, i).decode()}' | head -c {self.record_size - 1} >> journal"
                         f" && echo >> journal && sync journal && echo 'ack {i}' >&4 || exit 2")
        return "\n".join(lines) + "\n"

    def lost(self, required: list[int], files: dict[str, bytes]) -> list[Lost]:
        if not required:
            return []
        got = files.get(self.path)
        if got is None:
            return [Lost(i, f"{self.path} is missing") for i in required]
        out = []
        for i in required:
            start = (i - 1) * self.record_size
            if got[start:start + self.record_size] != self.record(i):
                out.append(Lost(i, f"record {i} of {self.path} is missing or wrong"))
        return out

    def params(self) -> dict:
        return {"count": self.count, "seed": self.seed, "record_size": self.record_size}


WORKLOADS = {"fsync-files": FsyncFiles, "fsync-append": FsyncAppend}


def workload(name: str, **params):
    try:
        cls = WORKLOADS[name]
    except KeyError:
        raise UsageError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None
    try:
        return cls(**params)
    except TypeError as e:
        raise UsageError(f"bad parameters for workload {name}: {e}") from None
