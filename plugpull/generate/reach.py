"""The sixth table's model (docs/generate.md#the-sixth-table): inode eviction between steps,
reflink and clone and copy_file_range between two of the fixed files, and the persistence of
a name the step did not touch. Plain functions on bytes and trees, so that `ops` (which owns
the operation table) can use them without this module knowing its `Op`."""

from plugpull.generate.tree import BLOCK, DIR, FILE, NAMES, ROOT, SNAPS, Tree, with_data


# drop_caches (Documentation/admin-guide/sysctl/vm.rst): 2 frees the reclaimable slab objects,
# dentries and inodes among them, which is the eviction wanted: the next step reads the inode
# back from disk. 1 (and so 3) frees the page cache as well, which an evicted inode's clean pages
# go with anyway. Neither writes anything back: dirty objects are not freed.
EVICT_COMMAND = "echo 2 > /proc/sys/vm/drop_caches"

# reflink variants: the xfs_io command's arguments after the source (FICLONE: none, the whole
# file; FICLONERANGE: the source's first block to the destination's second)
REFLINKS = {"file": "", "range": f" 0 {BLOCK} {BLOCK}"}

# the persistence points of a name the step did not touch, by the call they make
ANY_POINTS = {"fsync-any": "fsync", "fdatasync-any": "fdatasync"}


def cloned(family: str, variant: str, src: bytes, dst: bytes) -> bytes | None:
    """The destination's contents after a reflink or copy of `src` into it; None where the
    call fails (EINVAL), so no workload has it.

    copy_file_range (xfs_io `copy_range SRC`, no offsets: the source's size from 0) and
    FICLONE write the source over the start of the destination, which keeps what lies past
    it, and an empty source does nothing. FICLONE (generic_remap_file_range_prep,
    fs/remap_range.c) refuses a source whose size is not block-aligned when the destination
    is longer (the source's partial last block into the middle of the destination).
    FICLONERANGE of the source's first block (offset 0, 4096 bytes) to offset 4096 wants a
    source of at least that block (a shorter range would be shortened: EINVAL); a shorter
    destination is first extended with zeros. Measured with xfs_io 6.1 on xfs and btrfs."""
    if family == "copy" or variant == "file":
        if family == "reflink" and len(src) % BLOCK and len(src) < len(dst):
            return None
        return src + dst[len(src):]
    if len(src) < BLOCK:
        return None
    buf = bytearray(dst.ljust(2 * BLOCK, b"\0"))
    buf[BLOCK:2 * BLOCK] = src[:BLOCK]
    return bytes(buf)


def untouched(tree: Tree, files, dirs) -> list[tuple[str, str]]:
    """(point, path) for each persistence point of a name the step did not offer: fsync and
    fdatasync of each file there that is not among `files`, then fsync of each directory there
    (the work directory first) not among `dirs`. Names not there (untouched, or gone) are not
    offered: the setup makes no name for a point; nor is a snapshot (its entries are not judged,
    so its fsync would owe nothing)."""
    paths, inodes = tree.paths, tree.inodes
    there = [(p, inodes[paths[p]].kind) for p in NAMES if p in paths]
    out = []
    for path, kind in there:
        if kind == FILE and path not in files:
            out += [("fsync-any", path), ("fdatasync-any", path)]
    out += [("fsync-any", d) for d in (ROOT,) if d not in dirs]
    out += [("fsync-any", d) for d, kind in there if kind == DIR and d not in dirs and d not in SNAPS]
    return out


def changes_nothing(sim, op) -> bool:
    """A step that changes nothing of the model (`ops.Sim`), valid anywhere: `evict` (the model
    tree is what the disk and the caches both hold), and the sixteenth table's `quota.enable`."""
    return True


def clone_step(sim, op) -> bool:
    """A reflink or copy step on the model (`ops.Sim`): the source's data into the destination
    (`cloned`); two names of one inode are refused (EINVAL: the ranges overlap)."""
    tree, (src, dst) = sim.tree, op.args
    if not sim.exists(src) or not sim.exists(dst) or tree.paths[src] == tree.paths[dst]:
        return False
    data = cloned(op.family, op.variant, tree.inode(src).data, tree.inode(dst).data)
    if data is None:
        return False
    tree.set_inode(dst, with_data(tree.inode(dst), data))
    return True
