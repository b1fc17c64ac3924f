"""The persistence points that may follow each operation (`persistence_choices`), in the order
that numbers the workloads: sync, then fsync and fdatasync of what the operation touched (its
`subjects`), msync after an mmap write, ACE's fsync of a sibling after a nested operation, and
the sixth table's points of a name the step did not touch (`reach.untouched`); after the
seventh's unlink-open, only the points of the file it holds open (`unlinked`); after the
eighth's `again`, any point of the tree as it stands (`again`); ranged msyncs after the ninth
table's mmap (`sizes`). `followed` gives each with the Sim it leaves."""

from functools import lru_cache

from plugpull.generate.again import again_points
from plugpull.generate.fourth import FAMILY as FOURTH_NAME
from plugpull.generate.clonehole import QUOTA
from plugpull.generate.names import NAME_FAMILIES
from plugpull.generate.ops import DATA_FAMILIES, NESTED_DIR, Op, Persist, Sim, plain
from plugpull.generate.reach import untouched
from plugpull.generate.selfclone import SELF_FAMILIES
from plugpull.generate.sizes import RANGED
from plugpull.generate.snapshot import FAMILY as SNAPSHOT
from plugpull.generate.tmpfile import FAMILY as TMPFILE
from plugpull.generate.unlinked import OPEN_POINTS
from plugpull.generate.tree import DIR, DIRS, FILE, NAMES, ROOT, Inode, Tree, parent, sibling


def sibling_path(path: str) -> str:
    """The other file name in the same directory, as a path: A/C/foo's is A/C/bar."""
    return f"{parent(path)}/{sibling(path)}"


def subjects(op: Op) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files and the directories a persistence point after `op` may name."""
    args = op.args
    if op.family == "nested":
        return _nested_subjects(op)
    if op.family in NAME_FAMILIES:
        return _name_subjects(op)
    if op.family == FOURTH_NAME:
        return subjects(plain(op))  # its twin's
    if op.family in ("evict", QUOTA):  # touch no name
        return (), ()
    if op.family == SNAPSHOT:
        return (), (parent(args[0]),)  # its parent directory (btrfs/118's and 120's fsync)
    if op.family == TMPFILE:
        return (), args  # the file's directory: the file has no name to fsync again
    if op.family in ("reflink", "copy"):
        return args[1:], ()  # the destination: the source is unchanged
    if op.family in (*DATA_FAMILIES, *SELF_FAMILIES, "setxattr", "removexattr"):
        return args, ()
    if op.family == "creat":
        return args, (parent(args[0]),)
    if op.family == "rmdir":
        return (), (parent(args[0]),)
    if op.family in ("mkdir", "rename") and args[0] in DIRS:
        return (), (*args[1:], args[0], ROOT) if op.family == "rename" else (args[0], ROOT)
    if op.family in ("unlink", "symlink"):
        return (), (parent(args[0]),)
    files = args if op.family == "link" else args[1:]
    return files, tuple(dict.fromkeys(parent(a) for a in args))


def _nested_subjects(op: Op) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """As its plain twin's, with the parent of A/C (A) among the directories: ACE's fsync of
    the parent; after mkdir A/C, A/C and A."""
    if op.variant == "mkdir":
        return (), (NESTED_DIR, parent(NESTED_DIR))
    files = op.args[-1:] if op.variant in ("creat", "rename") else ()
    return files, tuple(dict.fromkeys([*(parent(a) for a in op.args), parent(NESTED_DIR)]))


def _name_subjects(op: Op) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """As its twin's (`ops.plain`), with the parent of A/C (A) among the directories after a
    link into or out of it, as after a nested operation; after a directory moved, the directory
    at its new name and both parents."""
    if op.family == "move-dir" and op.variant == "dir":
        return (), tuple(dict.fromkeys([op.args[1], parent(op.args[0]), parent(op.args[1])]))
    files, dirs = subjects(plain(op))
    extra = (parent(NESTED_DIR),) if op.family == "nested-link" else ()
    return files, tuple(dict.fromkeys([*dirs, *extra]))


def siblings(op: Op) -> tuple[str, ...]:
    """The files a persistence point after a nested operation may fsync besides those it
    touched: the sibling of each name it used, in that name's directory (ACE's fsync of a
    sibling)."""
    if op.family != "nested" or op.variant == "mkdir":
        return ()
    return tuple(dict.fromkeys(sibling_path(a) for a in op.args))


def persistence_choices(tree: Tree, op: Op, last: bool) -> tuple[Persist | None, ...]:
    """`choices_by_kinds` of the kinds of the fixed names there: which are there, as what, is
    all the choices read of the tree (asked for each valid step of every workload counted)."""
    paths, inodes = tree.paths, tree.inodes
    return choices_by_kinds(tuple((p, inodes[paths[p]].kind) for p in NAMES if p in paths), op, last)


@lru_cache(maxsize=1 << 16)
def choices_by_kinds(kinds: tuple[tuple[str, str], ...], op: Op, last: bool) -> tuple[Persist | None, ...]:
    """What may follow `op`: nothing (not after the last operation), sync, fsync or fdatasync
    of a file it touched, fsync of a directory it touched; in this order. After an mmap write,
    msync of its file; after a nested operation, fsync of a sibling file; then fsync and
    fdatasync of every other file there, and fsync of every other directory (`fsync-any`,
    `fdatasync-any`, the sixth table's). After unlink-open, fsync or fdatasync of the file it
    holds open and nothing else (`fsync-open`, `fdatasync-open`: the point of the operation).
    After the ninth table's mmap, msync of its first or last page (`msync-head`, `msync-tail`);
    after its `mmap.remap`, which maps the file to msync it, only those."""
    tree = Tree(dict(zip((path for path, _ in kinds), range(len(kinds)))),
                dict(enumerate(Inode(kind) for _, kind in kinds)))
    if op.family == "unlink-open":
        return tuple(Persist(kind, op.args[0]) for kind in OPEN_POINTS)
    if op.family == "mmap" and op.variant == "remap":
        return tuple(Persist(kind, op.args[0]) for kind in RANGED)
    files, dirs = subjects(op)
    out: list[Persist | None] = [] if last else [None]
    out.append(Persist("sync"))
    for f in files:
        if tree.kind(f) == FILE:
            out += [Persist("fsync", f), Persist("fdatasync", f)]
    out += [Persist("fsync", d) for d in dirs if tree.kind(d) == DIR]
    out += [Persist("fsync", s) for s in siblings(op) if tree.kind(s) == FILE]
    if op.family == "mmapwrite":
        out.append(Persist("msync", op.args[0]))
    if op.family == "mmap":
        out += [Persist(kind, op.args[0]) for kind in RANGED]
    offered = {p.path for p in out if p is not None and p.path is not None}
    out += [Persist(kind, path) for kind, path in untouched(tree, offered, offered)]
    return tuple(out)


def last_points(sim: Sim, op: Op) -> tuple[Persist, ...]:
    """The points that may end the last step, `op`, which left `sim` (`followed`'s, without
    the Sims they leave: what a count of the last step needs)."""
    if op.family == "again":
        return tuple(p for p, _ in again_points(sim))
    return persistence_choices(sim.tree, op, last=True)


def followed(sim: Sim, op: Op, last: bool) -> list[tuple[Persist | None, Sim]]:
    """(point, the Sim after it) for each persistence choice after `op`, which left `sim`."""
    if op.family == "again":
        return again_points(sim)
    return [(p, sim.ended(p is not None)) for p in persistence_choices(sim.tree, op, last)]
