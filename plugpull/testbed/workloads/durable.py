"""The oracle workloads: each ack promises data the crash state must still hold."""

import hashlib
from dataclasses import dataclass

from plugpull.testbed.workloads.base import (ACK_PORT, DIR, Findings, GuestWorkload, Lost, acked, content_line,
                                         repeated, shell_script, yes_head)


@dataclass(frozen=True)
class FsyncFiles(GuestWorkload):
    """Create files of 1-16 KiB one by one; after each, fsync the file and its directory."""

    count: int = 40
    seed: int = 1
    name = "fsync-files"
    write_once = True  # an acked file is never written again (check/writehole)
    invariants = ("an unacknowledged file holds nothing or a prefix of its data",)

    def ops(self) -> int:
        return self.count

    def path(self, ident: int) -> str:
        return f"{DIR}/f{ident:05d}"

    def size(self, ident: int) -> int:
        digest = hashlib.sha256(f"{self.seed}:{ident}".encode()).digest()
        return 1024 + int.from_bytes(digest[:4], "little") % (15 * 1024)

    def content(self, ident: int) -> bytes:
        return repeated(content_line(self.name, self.seed, ident), self.size(ident))

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        lines = []
        for i in range(1, self.count + 1):
            name = self.path(i).split("/")[-1]
            write = yes_head(content_line(self.name, self.seed, i), self.size(i))
            lines.append(acked(f"{write} > {name} && sync {name} .", i))
        return shell_script(mnt, ack, lines)

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        out = []
        for i in required:
            got = files.get(self.path(i))
            if got is None:
                out.append(Lost(i, f"{self.path(i)} is missing"))
            elif got != self.content(i):
                out.append(Lost(i, f"{self.path(i)} has wrong content ({len(got)} bytes, "
                                   f"expected {self.size(i)})"))
        return out

    def examine(self, required: list[int], files: dict, committed: list[int] = ()) -> Findings:
        owed = set(required)
        broken = []
        for i in range(1, self.count + 1):
            got = files.get(self.path(i))
            if i not in owed and got is not None and not self.content(i).startswith(got):
                broken.append(f"unacknowledged {self.path(i)} holds {len(got)} bytes that are not a "
                              f"prefix of its data (first foreign byte at {first_difference(got, self.content(i))})")
        return Findings(self.lost(required, files), broken)


@dataclass(frozen=True)
class FsyncAppend(GuestWorkload):
    """Append fixed-size records to one file, fsync after each: ack N promises records 1..N."""

    count: int = 100
    seed: int = 1
    record_size: int = 128
    name = "fsync-append"
    path = f"{DIR}/journal"
    invariants = ("the journal is a prefix of the written records",)

    def ops(self) -> int:
        return self.count

    def record(self, ident: int) -> bytes:
        return repeated(content_line(self.name, self.seed, ident), self.record_size - 1) + b"\n"

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        lines = [": > journal && sync journal . || exit 2"]
        for i in range(1, self.count + 1):
            write = yes_head(content_line(self.name, self.seed, i), self.record_size - 1)
            lines.append(acked(f"{write} >> journal && echo >> journal && sync journal", i))
        return shell_script(mnt, ack, lines)

    def lost(self, required: list[int], files: dict) -> list[Lost]:
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

    def written(self) -> bytes:
        return b"".join(self.record(i) for i in range(1, self.count + 1))

    def examine(self, required: list[int], files: dict, committed: list[int] = ()) -> Findings:
        got, written = files.get(self.path), self.written()
        broken = []
        if got is not None and not written.startswith(got):
            at = first_difference(got, written)
            broken.append(f"{self.path} is not a prefix of the written records: byte {at} "
                          f"(record {at // self.record_size + 1}) differs")
        return Findings(self.lost(required, files), broken)


def first_difference(got: bytes, expected: bytes) -> int:
    """The offset of the first byte of `got` that differs from `expected` (or lies beyond it)."""
    for at, (a, b) in enumerate(zip(got, expected)):
        if a != b:
            return at
    return min(len(got), len(expected))


@dataclass(frozen=True)
class AtomicReplace(GuestWorkload):
    """Replace one file atomically, again and again, as editors and package managers do:
    write a temp file, fsync it, rename it over the target, fsync the directory; ack V once
    version V is in place. Versions are 1-16 KiB, each a pure function of (seed, V)."""

    count: int = 30
    seed: int = 1
    name = "atomic-replace"
    target = f"{DIR}/target"
    temp = f"{DIR}/target.tmp"
    contract = "ack V promises that the target holds version V or a later one, in full"
    invariants = ("the target, once present, holds one version in full",
                  "a rename leaves the version under one name, never both or neither")

    def ops(self) -> int:
        return self.count

    def size(self, version: int) -> int:
        digest = hashlib.sha256(f"{self.seed}:{version}".encode()).digest()
        return 1024 + int.from_bytes(digest[:4], "little") % (15 * 1024)

    def content(self, version: int) -> bytes:
        return repeated(content_line(self.name, self.seed, version), self.size(version))

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        lines = []
        for v in range(1, self.count + 1):
            write = yes_head(content_line(self.name, self.seed, v), self.size(v))
            lines.append(acked(f"{write} > target.tmp && sync target.tmp && mv target.tmp target && sync .", v))
        return shell_script(mnt, ack, lines)

    def version(self, data: bytes | None) -> int | None:
        """Which version `data` is in full, or None."""
        if data is None:
            return None
        prefix = content_line(self.name, self.seed, 0)[:-1]
        head = data.split(b"\n", 1)[0]
        if not head.startswith(prefix) or not head[len(prefix):].isdigit():
            return None
        v = int(head[len(prefix):])
        return v if 1 <= v <= self.count and data == self.content(v) else None

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        held = self.version(files.get(self.target)) or 0
        return [Lost(v, f"{self.target} holds {f'version {held}' if held else 'no whole version'}; "
                        f"ack {v} promised version {v} or later") for v in required if held < v]

    def examine(self, required: list[int], files: dict, committed: list[int] = ()) -> Findings:
        return Findings(self.lost(required, files), self.broken(files.get(self.target), files.get(self.temp)))

    def broken(self, target: bytes | None, temp: bytes | None) -> list[str]:
        held, pending = self.version(target), self.version(temp)
        out = []
        if target is not None and held is None:
            out.append(f"{self.target} holds {len(target)} bytes that are no whole version (a torn replace)")
        if pending is not None and held == pending:
            out.append(f"version {pending} is under both names, {self.temp} and {self.target} (half a rename)")
        if target is None and pending is not None and pending >= 2:
            out.append(f"{self.target} is missing while version {pending} was being written "
                       f"(version {pending - 1} had been renamed over it)")
        if held is not None and pending is not None and held < pending - 1:
            out.append(f"{self.target} went back to version {held} although version {pending - 1} "
                       f"had been renamed over it")
        return out
