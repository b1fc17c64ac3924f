"""SQLite as an application runs it: one connection for the whole workload, an ack line only
after its COMMIT returned, and a contract that follows SQLite's documentation of
`synchronous` (https://www.sqlite.org/pragma.html#pragma_synchronous)."""

import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from plugpull.testbed.workloads.base import (ACK_PORT, DIR, Findings, Lost, TimedStep, GuestWorkload, content_line,
                                             shell_script)

DB = f"{DIR}/db"
DELETE_FULL = ("journal_mode=delete with synchronous=FULL does not sync the directory after the "
               "journal's unlink, which is the commit: SQLite documents this, synchronous=EXTRA is the fix")


@dataclass(frozen=True)
class Sqlite(GuestWorkload):
    """Transactions of one row each (row N = transaction N) through one `sqlite3` process.

    The CLI reads the whole workload on its stdin; after each COMMIT a `.shell` command writes
    the line for it to the ack port, so the line cannot leave before the COMMIT returned.
    With synchronous=FULL or EXTRA the line is `ack N`: a durability promise. With NORMAL in
    WAL mode a commit is durable only once a checkpoint covered it, so the line is `commit N`
    (told, not promised) and every `checkpoint` transactions a checkpoint is followed by
    `ack N`, which promises rows 1..N."""

    transactions: int = 50
    journal: str = "wal"
    synchronous: str = "full"
    checkpoint: int = 5
    seed: int = 1
    name = "sqlite"
    invariants = ("the rows form a prefix 1..k, each row whole", "PRAGMA integrity_check is ok")

    def __post_init__(self):
        if self.journal not in ("wal", "delete") or self.synchronous not in ("normal", "full", "extra"):
            raise TypeError("journal must be wal or delete; synchronous normal, full or extra")
        if self.journal == "delete" and self.synchronous == "normal":
            raise TypeError("journal=delete with synchronous=normal promises nothing after a power cut "
                            "(SQLite: the database may be corrupted); use full or extra")

    @property
    def promises_each_commit(self) -> bool:
        return self.synchronous in ("full", "extra")

    @property
    def documented_gap(self) -> bool:
        """journal=delete with synchronous=FULL: the promise SQLite itself documents as broken."""
        return self.journal == "delete" and self.synchronous == "full"

    @property
    def contract(self) -> str:
        if self.documented_gap:
            return f"every commit is promised, and the last one may roll back ({DELETE_FULL})"
        if self.promises_each_commit:
            return "every commit is durable"
        return "a commit is durable once a checkpoint covered it; the commits after it may be lost"

    def ops(self) -> int:
        return self.transactions

    def row(self, ident: int) -> str:
        return content_line(self.name, self.seed, ident).decode()

    def setup(self, mnt: str) -> str:
        return (f"sqlite3 {mnt}/{DB} 'PRAGMA journal_mode={self.journal}; "
                f"CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);' >/dev/null && sync")

    def sql(self, acks: bool = True) -> list[str]:
        """The CLI's input; without `acks`, the SQL alone (a throughput run has no ack port)."""
        told = "ack" if self.promises_each_commit else "commit"
        lines = [f"PRAGMA synchronous={self.synchronous};"]
        for i in range(1, self.transactions + 1):
            lines.append(f"BEGIN; INSERT INTO t VALUES ({i}, '{self.row(i)}'); COMMIT;")
            lines += [f".shell echo '{told} {i}' >&4"] if acks else []
            if self.journal == "wal" and i % self.checkpoint == 0:
                lines.append("PRAGMA wal_checkpoint(FULL);")
                lines += [f".shell echo 'ack {i}' >&4"] if acks and not self.promises_each_commit else []
        return lines

    def script(self, mnt: str, ack: str = ACK_PORT, acks: bool = True) -> str:
        return shell_script(mnt, ack, ["sqlite3 -bail db >/dev/null <<'EOF' || exit 2", *self.sql(acks), "EOF"])

    def steps(self, mnt: str) -> list[TimedStep]:
        return [TimedStep(self.name, self.script(mnt, ack="/dev/null", acks=False), ops=self.ops())]

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        return self.examine(required, files).lost

    def examine(self, required: list[int], files: dict, committed: list[int] = ()) -> Findings:
        rows, problem = read_rows(files)
        promised = max(required, default=0)
        if rows is None:
            if not required and not committed:
                return Findings()  # the cut may lie before the setup had made the database
            return Findings([Lost(i, problem) for i in required], [problem] if DB in files else [])
        note = f" ({DELETE_FULL})" if self.documented_gap else ""
        lost = [Lost(i, f"committed row {i} is missing or wrong{note}")
                for i in range(1, promised + 1) if rows.get(i) != self.row(i)]
        allowed = sum(1 for i in committed if i > promised and rows.get(i) != self.row(i))
        return Findings(lost, self.inconsistencies(rows) + ([problem] if problem else []), allowed)

    def inconsistencies(self, rows: dict) -> list[str]:
        out = []
        ids = sorted(rows)
        if ids != list(range(1, len(ids) + 1)):
            hole = next(i for i in range(1, len(ids) + 2) if i not in rows)
            out.append(f"the rows are not a prefix 1..k: row {hole} is missing while row {ids[-1]} is present")
        torn = [i for i in ids if rows[i] != self.row(i)]
        if torn:
            out.append(f"row {torn[0]} holds foreign content ({len(torn)} rows torn)")
        return out


def read_rows(files: dict) -> tuple[dict | None, str]:
    """The rows of the crash state's database (None if it cannot be read), and what is wrong
    with it ("" if nothing)."""
    if DB not in files:
        return None, "the database file is missing"
    with tempfile.TemporaryDirectory(prefix="plugpull-sqlite-") as tmp:
        for name, data in files.items():
            if name.startswith(DB):
                (Path(tmp) / name.split("/")[-1]).write_bytes(data)
        try:
            con = sqlite3.connect(Path(tmp) / "db")
            try:
                check = con.execute("PRAGMA integrity_check").fetchall()
                rows = dict(con.execute("SELECT id, v FROM t").fetchall())
            finally:
                con.close()
        except sqlite3.DatabaseError as e:
            return None, f"the database cannot be read: {e}"
    return rows, "" if check == [("ok",)] else f"integrity_check: {check[0][0]}"
