"""Workloads: what runs in the guest, what it promises, and how fast it went.

Each workload gives
- `steps(mnt)`: the timed guest commands of a throughput run (one phase each, unless the
  command reports its own phases: smallfiles, fio, bonnie++);
- `script(mnt, ack)`: the power-cut run, a busybox shell script that writes `ack ID` to fd 4
  (the ack port) only after what ID stands for is durable (fsync/sync returned);
- `lost(required, files)`: which of the owed acks a crash state broke, given the files the
  checker brought back (`collect`: "tar" = contents, "sums" = sha256 per file);
- optionally `payload()`: a read-only disk image the guest reads as /dev/vda (a tar to
  extract, a large file to copy), and `setup(mnt)`: untimed commands before the work.
Content is a pure function of the parameters and seed, so the host regenerates it.
"""

import hashlib
import random
import sqlite3
import tempfile
from dataclasses import dataclass, fields
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.paths import cache_dir
from plugpull.lab.tree import TreeShape, debian_payload, payload as tree_payload

DIR = "pp"
ACK_PORT = "/dev/plugpull-ack"
PAYLOAD_DEV = "/dev/vda"


def _line(kind: str, seed: int, ident: int) -> bytes:
    return f"plugpull {kind} seed={seed} id={ident}".encode()


def repeated(line: bytes, size: int) -> bytes:
    """What `yes LINE | head -c SIZE` writes."""
    unit = line + b"\n"
    return (unit * (size // len(unit) + 1))[:size]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Lost:
    ack: int
    reason: str


@dataclass(frozen=True)
class Step:
    """A timed guest command. `parser` names a parser of its output ("smallfiles", "fio",
    "bonnie") when the command measures its own phases."""

    name: str
    command: str
    ops: int | None = None
    bytes: int | None = None
    parser: str | None = None


class Workload:
    name = ""
    collect = "tar"
    metadata_heavy = False

    def params(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def payload(self) -> Path | None:
        return None

    def setup(self, mnt: str) -> str:
        return ""

    def memory_mib(self) -> int:
        return 1024

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        raise NotImplementedError

    def steps(self, mnt: str) -> list[Step]:
        """By default the power-cut script itself, timed, with its acks thrown away."""
        return [Step(self.name, self.script(mnt, ack="/dev/null"), ops=self.ops())]

    def ops(self) -> int | None:
        return None

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        raise NotImplementedError


def _header(mnt: str, ack: str) -> list[str]:
    return [f"cd {mnt}/{DIR} || exit 1", f"exec 4>{ack}"]


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
        return repeated(_line(self.name, self.seed, ident), self.size(ident))

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        lines = _header(mnt, ack)
        for i in range(1, self.count + 1):
            name = self.path(i).split("/")[-1]
            lines.append(f"yes '{_line(self.name, self.seed, i).decode()}' | head -c {self.size(i)} > {name}"
                         f" && sync {name} . && echo 'ack {i}' >&4 || exit 2")
        return "\n".join(lines) + "\n"

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
        return repeated(_line(self.name, self.seed, ident), self.record_size - 1) + b"\n"

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        lines = _header(mnt, ack) + [": > journal && sync journal . || exit 2"]
        for i in range(1, self.count + 1):
            lines.append(f"yes '{_line(self.name, self.seed, i).decode()}' | head -c {self.record_size - 1} >> journal"
                         f" && echo >> journal && sync journal && echo 'ack {i}' >&4 || exit 2")
        return "\n".join(lines) + "\n"

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


class _Tree(Workload):
    """Shared by the workloads that handle a kernel tree (plugpull.lab.tree): `source` is
    "synthetic" (the seeds' shape, `files` of them) or "debian" (linux-source-6.1; `files`
    is then ignored)."""

    collect = "sums"
    metadata_heavy = True

    def __post_init__(self):
        if self.source not in ("synthetic", "debian"):
            raise TypeError("source must be synthetic or debian")

    def tree(self):
        return debian_payload() if self.source == "debian" else tree_payload(TreeShape(self.files, self.seed))

    def payload(self) -> Path:
        return self.tree().tar

    def ops(self) -> int:
        return len(self.tree().manifest)

    def memory_mib(self) -> int:
        return 1024 + 2 * self.tree().bytes // (1 << 20)

    def tree_intact(self, required: list[int], sums: dict) -> list[Lost]:
        if not required:
            return []
        manifest = self.tree().manifest
        missing = [p for p in manifest if f"{DIR}/{p}" not in sums]
        wrong = [p for p in manifest if f"{DIR}/{p}" in sums and sums[f"{DIR}/{p}"] != manifest[p]]
        if missing or wrong:
            return [Lost(1, f"{len(missing)} files of the tree missing, {len(wrong)} with wrong content"
                            f" (e.g. {(missing + wrong)[0]})")]
        return []


@dataclass(frozen=True)
class TreeExtract(_Tree):
    """tar -xf of the kernel-shaped tree, then sync (seed 000's untar; seed 002's shape)."""

    files: int = 2000
    seed: int = 1
    source: str = "synthetic"
    name = "tree-extract"

    def steps(self, mnt: str) -> list[Step]:
        return [Step("extract", f"tar -xf {PAYLOAD_DEV} -C {mnt}/{DIR} && sync", self.ops(), self.tree().bytes)]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return "\n".join(_header(mnt, ack) + [f"tar -xf {PAYLOAD_DEV} && sync && echo 'ack 1' >&4 || exit 2"]) + "\n"

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        return self.tree_intact(required, files)


@dataclass(frozen=True)
class TreeRemove(_Tree):
    """rm -rf of the extracted tree, then sync (seed 000's and 002's rm)."""

    files: int = 2000
    seed: int = 1
    source: str = "synthetic"
    name = "tree-remove"

    def setup(self, mnt: str) -> str:
        return f"tar -xf {PAYLOAD_DEV} -C {mnt}/{DIR} && sync"

    def steps(self, mnt: str) -> list[Step]:
        return [Step("remove", f"rm -rf {mnt}/{DIR}/{self.tree().root} && sync", self.ops())]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return "\n".join(_header(mnt, ack) + [f"rm -rf {self.tree().root} && sync && echo 'ack 1' >&4 || exit 2"]) + "\n"

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        back = [p for p in files if p.startswith(f"{DIR}/{self.tree().root}/")]
        if required and back:
            return [Lost(1, f"{len(back)} files of the removed tree are back (e.g. {back[0]})")]
        return []


@dataclass(frozen=True)
class TreeCopy(_Tree):
    """rsync -a of the tree from the guest's RAM onto the filesystem (seed 002, case 1)."""

    files: int = 2000
    seed: int = 1
    source: str = "synthetic"
    name = "tree-copy"

    def setup(self, mnt: str) -> str:
        return f"mkdir -p /tmp/src && tar -xf {PAYLOAD_DEV} -C /tmp/src"

    def steps(self, mnt: str) -> list[Step]:
        return [Step("rsync", f"rsync -a /tmp/src/{self.tree().root} {mnt}/{DIR}/ && sync", self.ops(),
                     self.tree().bytes)]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        sync = f"rsync -a /tmp/src/{self.tree().root} . && sync && echo 'ack 1' >&4 || exit 2"
        return "\n".join(_header(mnt, ack) + [sync]) + "\n"

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        return self.tree_intact(required, files)


@dataclass(frozen=True)
class BigCopy(Workload):
    """cp of one large file, then sync (seed 002, case 3)."""

    mib: int = 64
    seed: int = 1
    name = "big-copy"
    collect = "sums"

    def source(self) -> bytes:
        return random.Random(f"big-copy {self.seed}").randbytes(self.mib << 20)

    def payload(self) -> Path:
        root = cache_dir() / "payloads"
        root.mkdir(parents=True, exist_ok=True)
        path = root / f"big-{self.mib}-{self.seed}.bin"
        if not path.is_file():
            with tempfile.NamedTemporaryFile(dir=root, delete=False) as f:
                f.write(self.source())
            Path(f.name).replace(path)
        return path

    def steps(self, mnt: str) -> list[Step]:
        return [Step("copy", f"cat {PAYLOAD_DEV} > {mnt}/{DIR}/big && sync", None, self.mib << 20)]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return "\n".join(_header(mnt, ack) + [f"cat {PAYLOAD_DEV} > big && sync && echo 'ack 1' >&4 || exit 2"]) + "\n"

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        if required and files.get(f"{DIR}/big") != sha256(self.source()):
            return [Lost(1, f"{DIR}/big is missing or differs from the source")]
        return []


@dataclass(frozen=True)
class SmallFiles(Workload):
    """Seed 003's benchmark: N files of 1 KB; sequential create, random open, random stat,
    random read, sequential delete (pp-smallfiles in the guest reports each phase)."""

    count: int = 2000
    size: int = 1024
    seed: int = 1
    name = "smallfiles"
    metadata_heavy = True

    def steps(self, mnt: str) -> list[Step]:
        return [Step("smallfiles", f"pp-smallfiles {mnt}/{DIR}/sf {self.count} {self.size} {self.seed}",
                     parser="smallfiles")]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        run = f"pp-smallfiles sf {self.count} {self.size} {self.seed} >/dev/null"
        return "\n".join(_header(mnt, ack) + [f"{run} && sync && echo 'ack 1' >&4 || exit 2"]) + "\n"

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        back = [p for p in files if p.startswith(f"{DIR}/sf/")]
        if required and back:
            return [Lost(1, f"{len(back)} deleted files are back (e.g. {back[0]})")]
        return []


@dataclass(frozen=True)
class Bonnie(Workload):
    """bonnie++ as the seeds ran it (-n files test; -s block test when size_mib > 0). It
    cleans up after itself and promises nothing: a crash state is judged by fsck alone."""

    files_k: int = 1
    size_mib: int = 0
    ram_mib: int = 0
    name = "bonnie"
    metadata_heavy = True

    def _argv(self, where: str) -> str:
        size = f"-s {self.size_mib} -r {self.ram_mib or max(1, self.size_mib // 2)}" if self.size_mib else "-s 0"
        return f"bonnie++ -d {where} -u root -n {self.files_k} {size} -q"

    def steps(self, mnt: str) -> list[Step]:
        return [Step("bonnie", self._argv(f"{mnt}/{DIR}"), parser="bonnie")]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return "\n".join(_header(mnt, ack) + [f"{self._argv('.')} >/dev/null || exit 2"]) + "\n"

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        return []


FIO_JOBS = {
    "seqwrite": "--rw=write --bs=1M",
    "rewrite": "--rw=write --bs=1M --overwrite=1",
    "randwrite-fsync": "--rw=randwrite --bs=4k --fsync=1",
}


@dataclass(frozen=True)
class Fio(Workload):
    """One fio job: seqwrite, rewrite, or randwrite-fsync; ack after it returns (end_fsync)."""

    job: str = "randwrite-fsync"
    size_mib: int = 16
    name = "fio"
    collect = "sums"

    def __post_init__(self):
        if self.job not in FIO_JOBS:
            raise TypeError(f"job must be one of {', '.join(FIO_JOBS)}")

    def _argv(self, filename: str) -> str:
        return (f"fio --output-format=json --name={self.job} {FIO_JOBS[self.job]} --size={self.size_mib}M "
                f"--filename={filename} --end_fsync=1 --ioengine=psync")

    def steps(self, mnt: str) -> list[Step]:
        prep = f"{self._argv(f'{mnt}/{DIR}/fio.dat')} >/dev/null && " if self.job == "rewrite" else ""
        return [Step(self.job, prep + self._argv(f"{mnt}/{DIR}/fio.dat"), parser="fio")]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return "\n".join(_header(mnt, ack) + [f"{self._argv('fio.dat')} >/dev/null && echo 'ack 1' >&4 || exit 2"]) + "\n"

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        if required and f"{DIR}/fio.dat" not in files:
            return [Lost(1, f"{DIR}/fio.dat is missing")]
        return []


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
        return _line(self.name, self.seed, ident).decode()

    def setup(self, mnt: str) -> str:
        return (f"sqlite3 {mnt}/{DIR}/db 'PRAGMA journal_mode={self.journal}; "
                f"CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);' >/dev/null && sync")

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        lines = _header(mnt, ack)
        for i in range(1, self.transactions + 1):
            lines.append(f"sqlite3 db \"PRAGMA synchronous={self.synchronous}; INSERT INTO t VALUES ({i}, '{self.row(i)}');\""
                         f" && echo 'ack {i}' >&4 || exit 2")
        return "\n".join(lines) + "\n"

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


WORKLOADS = {w.name: w for w in (FsyncFiles, FsyncAppend, TreeExtract, TreeRemove, TreeCopy, BigCopy,
                                 SmallFiles, Bonnie, Fio, Sqlite)}


def workload(name: str, **params) -> Workload:
    try:
        cls = WORKLOADS[name]
    except KeyError:
        raise UsageError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None
    try:
        return cls(**params)
    except TypeError as e:
        raise UsageError(f"bad parameters for workload {name}: {e}") from None
