"""The oracle workloads: each ack promises data the crash state must still hold."""

import hashlib
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from plugpull.lab.workloads.base import (ACK_PORT, DIR, Lost, Workload, acked, content_line, repeated,
                                         shell_script, yes_head)


@dataclass(frozen=True)
class FsyncFiles(Workload):
    """Create files of 1-16 KiB one by one; after each, fsync the file and its directory."""

    count: int = 40
    seed: int = 1
    name = "fsync-files"

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


@dataclass(frozen=True)
class FsyncAppend(Workload):
    """Append fixed-size records to one file, fsync after each: ack N promises records 1..N."""

    count: int = 100
    seed: int = 1
    record_size: int = 128
    name = "fsync-append"
    path = f"{DIR}/journal"

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


@dataclass(frozen=True)
class Sqlite(Workload):
    """Transactions in SQLite: ack N = row N committed (the INSERT returned).

    With journal=delete, synchronous=full does not sync the directory after the journal is
    unlinked, and the commit is that unlink: a power cut can bring the journal back and roll
    the last transaction back. SQLite documents this (synchronous=extra syncs the directory);
    plugpull shows it. The default, journal=wal, commits by an fsync of the WAL."""

    transactions: int = 50
    journal: str = "wal"
    synchronous: str = "full"
    seed: int = 1
    name = "sqlite"

    def __post_init__(self):
        if self.journal not in ("wal", "delete") or self.synchronous not in ("normal", "full", "extra"):
            raise TypeError("journal must be wal or delete; synchronous normal, full or extra")

    def ops(self) -> int:
        return self.transactions

    def row(self, ident: int) -> str:
        return content_line(self.name, self.seed, ident).decode()

    def setup(self, mnt: str) -> str:
        return (f"sqlite3 {mnt}/{DIR}/db 'PRAGMA journal_mode={self.journal}; "
                f"CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);' >/dev/null && sync")

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        insert = "sqlite3 db \"PRAGMA synchronous={}; INSERT INTO t VALUES ({}, '{}');\""
        return shell_script(mnt, ack, [acked(insert.format(self.synchronous, i, self.row(i)), i)
                                       for i in range(1, self.transactions + 1)])

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        if not required:
            return []
        if f"{DIR}/db" not in files:
            return [Lost(i, "the database file is missing") for i in required]
        with tempfile.TemporaryDirectory(prefix="plugpull-sqlite-") as tmp:
            for name, data in files.items():
                if name.startswith(f"{DIR}/db"):
                    (Path(tmp) / name.split("/")[-1]).write_bytes(data)
            try:
                con = sqlite3.connect(Path(tmp) / "db")
                try:
                    check = con.execute("PRAGMA integrity_check").fetchall()
                    rows = dict(con.execute("SELECT id, v FROM t").fetchall())
                finally:
                    con.close()
            except sqlite3.DatabaseError as e:
                return [Lost(i, f"the database cannot be read: {e}") for i in required]
        if check != [("ok",)]:
            return [Lost(i, f"integrity_check: {check[0][0]}") for i in required]
        return [Lost(i, f"committed row {i} is missing or wrong") for i in required if rows.get(i) != self.row(i)]

