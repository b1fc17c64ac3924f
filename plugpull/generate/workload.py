"""A generated workload as a workload of the crash pipeline: `--workload gen:seq2-000412`.

The recording guest runs its program (`program`); the checker guest walks the recovered work
directory with pp-tree (images/src/pp-tree.c; the `tree` collect), which prints each name's
kind, size, link count, inode number, content digest, symlink target, user xattrs and a
file's extents (fiemap) in one process; the host reads that back into a tree and judges it by the model oracle of the
filesystem (`judge`). A lost fact is reported against the ack of the point that owed it."""

import stat
from dataclasses import dataclass
from functools import cache

from plugpull.check.statecheck import TREE
from plugpull.errors import UsageError
from plugpull.generate.judge import judge
from plugpull.generate.oracle import PROFILES, on_profile, rules_of
from plugpull.generate.prealloc import covered
from plugpull.generate.program import program
from plugpull.generate.space import Workload as Generated, space_of
from plugpull.generate.tree import DIR, FIFO, FILE, NAMES, SNAPS, SYMLINK, Entry, under
from plugpull.testbed.workloads.base import ACK_PORT, Findings, Lost, GuestWorkload, shell_script

PREFIX = "gen:"
KINDS = {stat.S_IFREG: FILE, stat.S_IFDIR: DIR, stat.S_IFLNK: SYMLINK, stat.S_IFIFO: FIFO}  # by pp-tree's st_mode


def collected(text: str, known=frozenset(NAMES)) -> tuple[dict[str, Entry], list[str]]:
    """pp-tree's walk as a tree of the `known` names (the fixed ones, and a setup's many links),
    and the other names it found; ValueError on a line it could not have printed. What lies
    below a snapshot's name (the twelfth table's: a copy of the root subvolume) is neither: a
    snapshot's subtree is not judged."""
    entries, xattrs, extents, strays = {}, {}, {}, []
    for line in text.splitlines():
        words = line.split(" ")
        if words[0] in ("entry", "xattr", "extent") and len(words) >= 3 and in_snapshot(words[1]):
            continue
        if words[0] == "entry" and len(words) == 8 and words[1] not in known:
            strays.append(words[1])
        elif words[0] == "entry" and len(words) == 8:
            _, path, mode, size, nlink, ino, sum_, target = words
            kind = KINDS.get(stat.S_IFMT(int(mode, 16)))
            if kind is None:
                raise ValueError(f"{path}: neither a file, a directory, a symlink nor a fifo (mode {mode})")
            entries[path] = Entry(kind, int(size) if kind == FILE else None, sum_ if kind == FILE else None,
                                  int(nlink), (), target if kind == SYMLINK else None, int(ino))
        elif words[0] == "xattr" and len(words) >= 3:
            xattrs.setdefault(words[1], []).append((words[2], " ".join(words[3:])))
        elif words[0] == "extent" and len(words) == 5:
            extents.setdefault(words[1], []).append((int(words[2]), int(words[3])))
        elif line.strip():
            raise ValueError(f"a line pp-tree does not print: {line[:100]!r}")
    tree = {p: Entry(e.kind, e.size, e.digest, e.nlink, tuple(sorted(xattrs.get(p, ()))), e.target, e.ino,
                     covered(extents.get(p, ())) if e.kind == FILE else None)
            if e.kind != SYMLINK else e for p, e in entries.items()}
    return tree, strays


def in_snapshot(path: str) -> bool:
    return any(under(path, s) and path != s for s in SNAPS)


@dataclass(frozen=True)
class GeneratedWorkload(GuestWorkload):
    """`ident`: the generated workload's id; `profile`: whose rules judge it (posix, ext4,
    xfs, btrfs: the filesystem's own, else posix); `fs`: the filesystem it runs on, whose
    refusals (oracle.REFUSED) are not done ("": the profile's)."""

    ident: str
    profile: str = "posix"
    fs: str = ""
    name = "gen"
    collect = "tree"
    contract = "ack k: what persistence points 0..k owe by the model oracle's rules (docs/generate.md)"
    invariants = ("the tree is one a point of the workload gives: no name of a kind it never had, "
                  "no two names on one inode that never shared it",)

    def __post_init__(self):
        if self.profile not in PROFILES:
            raise UsageError(f"unknown oracle profile {self.profile!r}: expected one of {', '.join(PROFILES)}")
        self.generated  # a bad id is refused here

    @property
    def generated(self) -> Generated:
        return _parsed(self.ident)

    @property
    def run(self) -> Generated:
        """The workload as its filesystem runs it: what it refuses not done."""
        return on_profile(self.generated, self.fs or self.profile)

    def memory_mib(self) -> int:
        return 512

    def ops(self) -> int:
        return len(self.generated.steps)

    def program(self) -> str:
        """The guest program as this profile's filesystem runs it: what it refuses not done."""
        return program(self.run)

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return shell_script(mnt, ack, [self.program()], echoed=True)

    def examine(self, required: list[int], files: dict, committed: list[int] = ()) -> Findings:
        """The collected tree judged with acks 0..k owed, k the highest of `required`. A work
        directory that is gone is an empty tree: each fact it owed is lost under its own rule."""
        known = frozenset(NAMES).union(*(t.paths for t in self.run.trees))
        tree, strays = collected(_text(files, TREE), known) if TREE in files else ({}, [])  # no work directory: empty
        found = judge(self.run, self.profile, max(required) if required else None, tree)
        broken = [*found.broken, *(f"{p} is a name no point of the workload has" for p in strays)]
        return Findings([Lost(point, reason) for point, reason in found.lost], broken)

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        return self.examine(required, files).lost


@cache
def _parsed(ident: str) -> Generated:
    """The workload an id names, its model trees kept: every crash state of a run judges it."""
    return space_of(ident).parse(ident)


def _text(files: dict, key: str) -> str:
    value = files.get(key, b"")
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def generated_workload(name: str, fs: str) -> GeneratedWorkload:
    """`gen:ID` on `fs`, judged by its rules (posix for a filesystem the oracle has no rules of)."""
    return GeneratedWorkload(name[len(PREFIX):], rules_of(fs), fs)
