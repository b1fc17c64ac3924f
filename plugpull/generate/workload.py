"""A generated workload as a workload of the crash pipeline: `--workload gen:seq2-000412`.

The recording guest runs its program (`program`); the checker guest runs `COLLECTOR` in the
recovered work directory (the `script` collect, as a user's check script is run), which prints
the fixed names' kinds, sizes, link counts, inode numbers, digests, symlink targets and user
xattrs; the host reads that back into a tree and judges it by the model oracle of the
filesystem (`judge`). A lost fact is reported against the ack of the point that owed it."""

import stat
from dataclasses import dataclass
from functools import cache

from plugpull.errors import UsageError
from plugpull.generate.judge import judge
from plugpull.generate.oracle import PROFILES
from plugpull.generate.program import program
from plugpull.generate.space import Workload as Generated, space_of
from plugpull.generate.tree import DIR, FILE, NAMES, SYMLINK, Entry
from plugpull.testbed.workloads.base import ACK_PORT, Findings, Lost, Workload, shell_script

PREFIX = "gen:"
OUTPUT, STATUS = "check-script.out", "check-script.rc"  # the script collect's "files"

# busybox sh in the recovered work directory: one `entry` line per name there, its xattrs after it
COLLECTOR = f"""for p in {' '.join(NAMES)}; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    set -- $(stat -c '%f %s %h %i' "$p")
    sum=- target=-
    [ -L "$p" ] && target=$(readlink "$p")
    [ -f "$p" ] && [ ! -L "$p" ] && sum=$(sha256sum < "$p" | cut -d' ' -f1)
    echo "entry $p $1 $2 $3 $4 $sum $target"
    pp-xattr list "$p" | while read -r name value; do echo "xattr $p $name $value"; done
done
"""


def collected(text: str) -> dict[str, Entry]:
    """`COLLECTOR`'s output as a tree; ValueError on a line it could not have printed."""
    entries, xattrs = {}, {}
    for line in text.splitlines():
        words = line.split(" ")
        if words[0] == "entry" and len(words) == 8 and words[1] in NAMES:
            _, path, mode, size, nlink, ino, sum_, target = words
            kind = {stat.S_IFREG: FILE, stat.S_IFDIR: DIR, stat.S_IFLNK: SYMLINK}.get(stat.S_IFMT(int(mode, 16)))
            if kind is None:
                raise ValueError(f"{path}: neither a file, a directory nor a symlink (mode {mode})")
            entries[path] = Entry(kind, int(size) if kind == FILE else None, sum_ if kind == FILE else None,
                                  int(nlink), (), target if kind == SYMLINK else None, int(ino))
        elif words[0] == "xattr" and len(words) >= 3 and words[1] in NAMES:
            xattrs.setdefault(words[1], []).append((words[2], " ".join(words[3:])))
        elif line.strip():
            raise ValueError(f"a line the collector does not print: {line[:100]!r}")
    return {p: Entry(e.kind, e.size, e.digest, e.nlink, tuple(sorted(xattrs.get(p, ()))), e.target, e.ino)
            if e.kind != SYMLINK else e for p, e in entries.items()}


@dataclass(frozen=True)
class GeneratedWorkload(Workload):
    """`ident`: the generated workload's id; `profile`: whose rules judge it (posix, ext4,
    xfs, btrfs: the filesystem's own, else posix)."""

    ident: str
    profile: str = "posix"
    name = "gen"
    collect = "script"
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
    def check(self) -> str:
        return COLLECTOR

    def memory_mib(self) -> int:
        return 512

    def ops(self) -> int:
        return len(self.generated.steps)

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        return shell_script(mnt, ack, [program(self.generated)])

    def examine(self, required: list[int], files: dict, committed: list[int] = ()) -> Findings:
        """The collected tree judged with acks 0..k owed, k the highest of `required`."""
        if _text(files, STATUS) == "absent":
            return Findings([Lost(i, "the work directory is missing") for i in required])
        found = judge(self.generated, self.profile, max(required) if required else None,
                      collected(_text(files, OUTPUT)))
        return Findings([Lost(point, reason) for point, reason in found.lost], list(found.broken))

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
    """`gen:ID` judged by `fs`'s rules (posix for a filesystem the oracle has no rules of)."""
    return GeneratedWorkload(name[len(PREFIX):], fs if fs in PROFILES else "posix")
