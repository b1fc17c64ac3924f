"""The model of a small file tree: paths naming inodes, the inodes' data, xattrs and symlink
targets. Generated workloads are simulated on it (which operations are valid, what each leaves),
and a recovered filesystem is compared with it in the same shape, `Entry`.

Paths are relative to the workload's work directory, "." is that directory itself. The names a
workload may use are fixed: `DIRS` and `FILES`, the nested directory `A/C` with its files
(`NESTED`; under `B` once `A` is renamed to it or it is moved there), and a third file name in
each directory (`THIRD`, the tenth table's), the names of btrfs snapshots (`SNAPS`, the
twelfth table's) and a fourth file name in A (`FOURTH`, the fifteenth table's), see
docs/generate.md. A fifo (`FIFO`) is only ever made by the fifo setup (`setups`)."""

import hashlib
from collections import Counter
from functools import lru_cache
from dataclasses import dataclass, field, replace
from types import MappingProxyType

ROOT = "."
DIRS = ("A", "B")
FILES = ("A/foo", "A/bar", "B/foo", "B/bar")
FOO = FILES[0]  # A/foo: the file the setups' extras, holes, prealloc and clone-hole act on
NESTED_DIR = "A/C"  # ACE's nested directory: a subdirectory of A
NESTED_FILES = ("A/C/foo", "A/C/bar")
NESTED = (NESTED_DIR, *NESTED_FILES, "B/C", "B/C/foo", "B/C/bar")  # B/C: where a rename of A takes A/C
THIRD = ("A/baz", "B/baz")  # the tenth table's third name in each directory (fstests' own: generic/552's dir/baz)
# the twelfth table's snapshots of the root subvolume, in the work directory and in A (B/snap: where a rename
# of A takes A/snap); a snapshot is a directory here, and nothing below it is among the names
SNAPS = ("snap", "A/snap", "B/snap")
FOURTH = ("A/qux", "B/qux")  # the fifteenth table's fourth name in A (B/qux: where a rename of A takes it)
# names no operation of the first tables makes: owed only where a workload has them
OPTIONAL = NESTED + THIRD + SNAPS + FOURTH
NAMES = DIRS + FILES + NESTED + THIRD + SNAPS + FOURTH
_ORDER = {p: i for i, p in enumerate(NAMES)}

FILE, DIR, SYMLINK, FIFO = "file", "dir", "symlink", "fifo"
BLOCK = 4096  # the block the model's ranges are aligned to and counted in (direct-I/O and mmap writes' length)


def parent(path: str) -> str:
    head, sep, _ = path.rpartition("/")
    return head if sep else ROOT


def sibling(path: str) -> str:
    """The other file name in the same directory: what `symlink` points to."""
    head, _, name = path.rpartition("/")
    return "bar" if name == "foo" else "foo"


def name_key(path: str) -> tuple:
    """The order names are listed in: the fixed names in `NAMES`' order, then any other (a
    setup's many links) by length and text (`foo_link_9` before `foo_link_10`)."""
    return (0, _ORDER[path], "") if path in _ORDER else (1, len(path), path)


def under(path: str, top: str) -> bool:
    """`path` is `top` or lies below it."""
    return path == top or path.startswith(top + "/")


@lru_cache(maxsize=4096)
def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Blocks(frozenset):
    """Block numbers: a file's blocks an fallocate past its end gave it, or that its extents cover."""

    def __repr__(self) -> str:
        return f"blocks {{{', '.join(map(str, sorted(self)))}}}"

    __str__ = __repr__


@dataclass(frozen=True)
class Inode:
    kind: str
    data: bytes = b""
    xattrs: tuple[tuple[str, str], ...] = ()  # sorted (name, value) pairs
    target: str = ""  # a symlink's
    prealloc: frozenset = frozenset()  # the blocks an fallocate past the end gave a file (`prealloc`)


@dataclass(frozen=True)
class Entry:
    """One path of a tree as a recovered filesystem shows it. `ino` ties hard links together
    (any numbering; None if unknown); `digest` is the sha256 of a regular file's contents."""

    kind: str
    size: int | None = None
    digest: str | None = None
    nlink: int | None = None
    xattrs: tuple[tuple[str, str], ...] = ()
    target: str | None = None
    ino: int | None = None
    extents: frozenset | None = None  # the blocks an extent covers (fiemap), past the end too; None: not read


@dataclass
class Tree:
    """`paths`: path -> inode number; the work directory "." is implicit and always a dir."""

    paths: dict[str, int] = field(default_factory=dict)
    inodes: dict[int, Inode] = field(default_factory=dict)
    _nlinks: Counter | None = field(default=None, repr=False, compare=False)  # a sealed tree's, by inode

    def copy(self) -> "Tree":
        return Tree(dict(self.paths), dict(self.inodes))

    def sealed(self) -> "Tree":
        """A copy that cannot change (a change raises TypeError), whose files' link counts are
        counted once: a setup's thousands of links make counting them per name quadratic."""
        return Tree(MappingProxyType(dict(self.paths)), MappingProxyType(dict(self.inodes)),
                    Counter(self.paths.values()))

    def kind(self, path: str) -> str | None:
        if path == ROOT:
            return DIR
        ino = self.paths.get(path)
        return None if ino is None else self.inodes[ino].kind

    def inode(self, path: str) -> Inode:
        return self.inodes[self.paths[path]]

    def names(self) -> tuple[str, ...]:
        """Every name in the tree, in `name_key` order."""
        return tuple(sorted(self.paths, key=name_key))

    def names_of(self, ino: int) -> tuple[str, ...]:
        return tuple(sorted((p for p, i in self.paths.items() if i == ino), key=name_key))

    def nlink(self, path: str) -> int:
        ino = self.paths[path]
        if self.inodes[ino].kind == DIR:
            return 2 + sum(1 for p in self.paths if parent(p) == path and self.kind(p) == DIR)
        return self._nlinks[ino] if self._nlinks is not None else list(self.paths.values()).count(ino)

    def children(self, path: str) -> tuple[str, ...]:
        return tuple(sorted((p for p in self.paths if parent(p) == path), key=name_key))

    def new_inode(self, node: Inode) -> int:
        ino = max(self.inodes, default=0) + 1
        self.inodes[ino] = node
        return ino

    def set_inode(self, path: str, node: Inode) -> None:
        self.inodes[self.paths[path]] = node

    def unlink(self, path: str) -> None:
        ino = self.paths.pop(path)
        if ino not in self.paths.values():
            del self.inodes[ino]

    def rename(self, src: str, dst: str) -> None:
        """rename(2): `dst` (if any) is replaced; a directory carries what lies below it."""
        if self.paths.get(src) == self.paths.get(dst):
            return  # the same inode under both names: rename does nothing
        if dst in self.paths:
            self.unlink(dst)
        moved = {p: ino for p, ino in self.paths.items() if under(p, src)}
        for p in moved:
            del self.paths[p]
        for p, ino in moved.items():
            self.paths[dst + p[len(src):]] = ino

    def entry(self, path: str) -> Entry:
        node = self.inode(path)
        ino = self.paths[path]
        if node.kind == FILE:
            return Entry(FILE, len(node.data), digest(node.data), self.nlink(path), node.xattrs, ino=ino)
        if node.kind == SYMLINK:
            return Entry(SYMLINK, target=node.target, nlink=self.nlink(path), ino=ino)
        if node.kind == FIFO:
            return Entry(FIFO, nlink=self.nlink(path), ino=ino)
        return Entry(DIR, nlink=self.nlink(path), xattrs=node.xattrs, ino=ino)

    def view(self) -> dict[str, Entry]:
        """The tree as a recovered filesystem would show it: path -> `Entry`."""
        return {p: self.entry(p) for p in self.names()}


def fact(tree: Tree, path: str, name: str):
    """The value of fact `name` of `path` in `tree` (None where it does not apply)."""
    kind = tree.kind(path)
    if name == "kind" or kind is None:
        return kind
    if name == "nlink":  # the one fact that counts names: not worked out for the others
        return tree.nlink(path)
    node = tree.inode(path)
    return {"size": len(node.data) if kind == FILE else None, "digest": digest(node.data) if kind == FILE else None,
            "xattrs": node.xattrs, "target": node.target if kind == SYMLINK else None,
            "extents": Blocks(node.prealloc) if kind == FILE else None}[name]


def all_facts(tree: Tree, path: str) -> list[tuple[str, str, object]]:
    """Every fact of `path` in `tree` as (path, name, value): a file's kind, size, digest, link
    count, xattrs and its extents where it has blocks past its end, a symlink's kind and target,
    a fifo's kind and link count, else the kind."""
    names = {FILE: ("kind", "size", "digest", "nlink", "xattrs", "extents"), SYMLINK: ("kind", "target"),
             FIFO: ("kind", "nlink")}
    return [(path, n, v) for n in names.get(tree.kind(path), ("kind",)) if (v := fact(tree, path, n)) or n != "extents"]


def with_data(node: Inode, data: bytes) -> Inode:
    """`node` with contents `data` (a clone's), the blocks it had past its end owed no more."""
    return replace(node, data=data, prealloc=frozenset())


def with_xattr(node: Inode, name: str, value: str | None) -> Inode:
    """`node` with xattr `name` set to `value` (None: removed)."""
    kept = dict(node.xattrs)
    if value is None:
        kept.pop(name, None)
    else:
        kept[name] = value
    return replace(node, xattrs=tuple(sorted(kept.items())))


def read_tree(root) -> dict[str, Entry]:
    """A real directory (a recovered work directory) in the shape of `Tree.view`: the fixed
    names that are there, with inode numbers as `ino`. A fifo is never opened (opening one waits
    for the other end)."""
    import os
    import stat
    out = {}
    for path in NAMES:
        full = os.path.join(root, path)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):  # A/C/foo where A/C is a file
            continue
        xattrs = tuple(sorted((n, os.getxattr(full, n, follow_symlinks=False).decode())
                              for n in os.listxattr(full, follow_symlinks=False) if n.startswith("user.")))
        if stat.S_ISLNK(st.st_mode):
            out[path] = Entry(SYMLINK, target=os.readlink(full), nlink=st.st_nlink, ino=st.st_ino)
        elif stat.S_ISFIFO(st.st_mode):
            out[path] = Entry(FIFO, nlink=st.st_nlink, ino=st.st_ino)
        elif stat.S_ISDIR(st.st_mode):
            out[path] = Entry(DIR, nlink=st.st_nlink, xattrs=xattrs, ino=st.st_ino)
        else:
            with open(full, "rb") as f:
                data = f.read()
            out[path] = Entry(FILE, len(data), digest(data), st.st_nlink, xattrs, ino=st.st_ino)
    return out
