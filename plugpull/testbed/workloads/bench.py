"""The benchmark workloads: trees, a large copy, small files, bonnie++ and fio. Most ack
once, at their end; the check asks whether what they wrote (or removed) stayed so."""

import functools
import hashlib
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from plugpull.paths import cache_dir
from plugpull.prune import mark_used
from plugpull.testbed.tree import TreeShape, debian_payload, payload as tree_payload
from plugpull.testbed.workloads.base import (ACK_PORT, DIR, PAYLOAD_DEV, Lost, TimedStep, GuestWorkload, acked,
                                         shell_script)


def _came_back(required: list[int], files: dict, prefix: str, what: str) -> list[Lost]:
    """After a removal that was acked: the files under `prefix` that the crash state still has."""
    back = [p for p in files if p.startswith(prefix)]
    if required and back:
        return [Lost(1, f"{len(back)} {what} are back (e.g. {back[0]})")]
    return []


@dataclass(frozen=True)
class _Tree(GuestWorkload):
    """Shared by the workloads that handle a kernel tree (plugpull.testbed.tree): `source` is
    "synthetic" (the seeds' shape, `files` of them) or "debian" (linux-source-6.1; `files`
    is then ignored). Once acked, the whole tree must be there with the right content."""

    files: int = 2000
    seed: int = 1
    source: str = "synthetic"
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

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        if not required:
            return []
        manifest = self.tree().manifest
        missing = [p for p in manifest if f"{DIR}/{p}" not in files]
        wrong = [p for p in manifest if f"{DIR}/{p}" in files and files[f"{DIR}/{p}"] != manifest[p]]
        if missing or wrong:
            return [Lost(1, f"{len(missing)} files of the tree missing, {len(wrong)} with wrong content"
                            f" (e.g. {(missing + wrong)[0]})")]
        return []


@dataclass(frozen=True)
class TreeExtract(_Tree):
    """tar -xf of the kernel-shaped tree, then sync (seed 000's untar; seed 002's shape)."""

    name = "tree-extract"

    def steps(self, mnt: str) -> list[TimedStep]:
        return [TimedStep("extract", f"tar -xf {PAYLOAD_DEV} -C {mnt}/{DIR} && sync", self.ops(), self.tree().bytes)]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return shell_script(mnt, ack, [acked(f"tar -xf {PAYLOAD_DEV} && sync")])


@dataclass(frozen=True)
class TreeRemove(_Tree):
    """rm -rf of the extracted tree, then sync (seed 000's and 002's rm)."""

    name = "tree-remove"

    def setup(self, mnt: str) -> str:
        return f"tar -xf {PAYLOAD_DEV} -C {mnt}/{DIR} && sync"

    def steps(self, mnt: str) -> list[TimedStep]:
        return [TimedStep("remove", f"rm -rf {mnt}/{DIR}/{self.tree().root} && sync", self.ops())]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return shell_script(mnt, ack, [acked(f"rm -rf {self.tree().root} && sync")])

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        return _came_back(required, files, f"{DIR}/{self.tree().root}/", "files of the removed tree")


@dataclass(frozen=True)
class TreeCopy(_Tree):
    """rsync -a of the tree from the guest's RAM onto the filesystem (seed 002, case 1)."""

    name = "tree-copy"

    def setup(self, mnt: str) -> str:
        return f"mkdir -p /tmp/src && tar -xf {PAYLOAD_DEV} -C /tmp/src"

    def steps(self, mnt: str) -> list[TimedStep]:
        return [TimedStep("rsync", f"rsync -a /tmp/src/{self.tree().root} {mnt}/{DIR}/ && sync", self.ops(),
                     self.tree().bytes)]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return shell_script(mnt, ack, [acked(f"rsync -a /tmp/src/{self.tree().root} . && sync")])


@dataclass(frozen=True)
class BigCopy(GuestWorkload):
    """cp of one large file, then sync (seed 002, case 3)."""

    mib: int = 64
    seed: int = 1
    name = "big-copy"
    collect = "sums"

    def chunks(self) -> Iterator[bytes]:
        """The file to copy, a MiB at a time: `randbytes` takes no more than 256 MiB - 1 byte at once."""
        rng = random.Random(f"big-copy {self.seed}")
        for _ in range(self.mib):
            yield rng.randbytes(1 << 20)

    def payload(self) -> Path:
        root = cache_dir() / "payloads"
        root.mkdir(parents=True, exist_ok=True)
        path = root / f"big-by-mib-{self.mib}-{self.seed}.bin"
        if not path.is_file():
            with tempfile.NamedTemporaryFile(dir=root, delete=False) as f:
                for chunk in self.chunks():
                    f.write(chunk)
            Path(f.name).replace(path)
        mark_used(path)
        return path

    def steps(self, mnt: str) -> list[TimedStep]:
        return [TimedStep("copy", f"cat {PAYLOAD_DEV} > {mnt}/{DIR}/big && sync", None, self.mib << 20)]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return shell_script(mnt, ack, [acked(f"cat {PAYLOAD_DEV} > big && sync")])

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        if required and files.get(f"{DIR}/big") != _digest(self):
            return [Lost(1, f"{DIR}/big is missing or differs from the source")]
        return []


@dataclass(frozen=True)
class SmallFiles(GuestWorkload):
    """Seed 003's benchmark: N files of 1 KB; sequential create, random open, random stat,
    random read, sequential delete (pp-smallfiles in the guest reports each phase)."""

    count: int = 2000
    size: int = 1024
    seed: int = 1
    name = "smallfiles"
    metadata_heavy = True

    def steps(self, mnt: str) -> list[TimedStep]:
        return [TimedStep("smallfiles", f"pp-smallfiles {mnt}/{DIR}/sf {self.count} {self.size} {self.seed}",
                     parser="smallfiles")]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        run = f"pp-smallfiles sf {self.count} {self.size} {self.seed} >/dev/null"
        return shell_script(mnt, ack, [acked(f"{run} && sync")])

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        return _came_back(required, files, f"{DIR}/sf/", "deleted files")


@dataclass(frozen=True)
class Bonnie(GuestWorkload):
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

    def steps(self, mnt: str) -> list[TimedStep]:
        return [TimedStep("bonnie", self._argv(f"{mnt}/{DIR}"), parser="bonnie")]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return shell_script(mnt, ack, [f"{self._argv('.')} >/dev/null || exit 2"])

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        return []


FIO_JOBS = {
    "seqwrite": "--rw=write --bs=1M",
    "rewrite": "--rw=write --bs=1M --overwrite=1",
    "randwrite-fsync": "--rw=randwrite --bs=4k --fsync=1",
}


@dataclass(frozen=True)
class Fio(GuestWorkload):
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

    def steps(self, mnt: str) -> list[TimedStep]:
        prep = f"{self._argv(f'{mnt}/{DIR}/fio.dat')} >/dev/null && " if self.job == "rewrite" else ""
        return [TimedStep(self.job, prep + self._argv(f"{mnt}/{DIR}/fio.dat"), parser="fio")]

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return shell_script(mnt, ack, [acked(f"{self._argv('fio.dat')} >/dev/null")])

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        if required and f"{DIR}/fio.dat" not in files:
            return [Lost(1, f"{DIR}/fio.dat is missing")]
        return []


@functools.cache
def _digest(workload: BigCopy) -> str:
    """sha256 of the big file, computed once per run, not once per crash state."""
    h = hashlib.sha256()
    for chunk in workload.chunks():
        h.update(chunk)
    return h.hexdigest()
