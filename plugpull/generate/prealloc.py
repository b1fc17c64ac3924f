"""Blocks preallocated past a file's end, and the shapes' rows that make them (docs/generate.md,
"Extents past the end"). fallocate with FALLOC_FL_KEEP_SIZE (`falloc -k`) allocates blocks and
leaves the size: nothing a read sees, but the space is the file's, and fiemap lists its extents
(unwritten). The model keeps, per inode, the blocks an fallocate past the end gave it
(`Inode.prealloc`), the fact `extents` the rule `fsync-extents` owes (oracle.py), and the
checker's walk (pp-tree) reads back which blocks an extent covers (`Entry.extents`).

The fourth table's `falloc-eof.keep-size` (2 blocks at the size) makes them; so do this family's
rows, which no table has: only the shapes that name the family (`eof-gap`, `eof-truncate`) take
them, so no table's ids move and no seq's count grows. Their ranges are fstests generic/677's
and btrfs/211's in blocks: a second range past the end, one block after falloc-eof's (677: 16 MiB
+ 1 MiB and 20 MiB + 1 MiB), or right after it (211: 0 + 128 KiB and 128 KiB + 128 KiB); a plain
fallocate of the first block, which moves the size into the first range (211: falloc 0 + 64
KiB); a truncate up to 4 blocks, the end of both ranges of a new file (211: truncate 256 KiB).

What later operations do to the blocks: a write, a fallocate that allocates and a truncate up
keep them; a truncate to the same size or down frees those past the new end (ext4 and btrfs
truncate past the size unless it grows); any other operation on the file (a
punch, a clone, collapse or insert range) is taken to free them all: owed no more."""

from dataclasses import replace

from plugpull.generate.tree import BLOCK, FOO, Blocks

FAMILY = "prealloc"
# variant: (the xfs_io command, offset past the size rounded up to a block, length); `truncate`'s
# length is the size it sets, `falloc`'s offset is from the file's start
PREALLOCS = {
    "next": ("falloc -k", 2 * BLOCK, 2 * BLOCK),  # 211: falloc -k 128 KiB + 128 KiB, after falloc-eof's
    "gap": ("falloc -k", 3 * BLOCK, 2 * BLOCK),  # 677: falloc -k 20 MiB + 1 MiB, a block after falloc-eof's
    "head": ("falloc", 0, BLOCK),  # 211: falloc 0 + 64 KiB, half of the first range
    "cover": ("truncate", 0, 4 * BLOCK),  # 211: truncate 256 KiB, the end of both ranges
}
PREALLOC_ROWS = tuple((FAMILY, v, (FOO,)) for v in PREALLOCS)
KEEPING = ("write", "dwrite", "mmapwrite", "falloc-eof", FAMILY)  # operations that free no block
SHRINKING = ("truncate", "resize", "holes")  # a new size below the old frees the blocks past it


def blocks_of(offset: int, length: int) -> frozenset:
    return frozenset(range(offset // BLOCK, -(-(offset + length) // BLOCK)))


def start(size: int, variant: str) -> int:
    """Where the operation `variant` starts on a file of `size` bytes."""
    kind, offset, _ = PREALLOCS[variant]
    return offset if kind != "falloc -k" else -(-size // BLOCK) * BLOCK + offset


def prealloc_data(family: str, variant: str, data: bytes, fill: int) -> bytes:
    """A file's contents after the operation `variant` (as `ops.MODELS` takes it)."""
    kind, _, length = PREALLOCS[variant]
    if kind == "falloc -k":
        return data
    if kind == "falloc":
        return data.ljust(length, b"\0")
    return data[:length].ljust(length, b"\0")


def prealloc_command(variant: str, path: str, fill: int, size: int) -> tuple[str, bool]:
    """xfs_io's options for `variant` on a file of `size` bytes (one step of
    program.FILE_STEPS: the path and fill are not needed here), and whether it is a fallocate."""
    kind, _, length = PREALLOCS[variant]
    if kind == "truncate":
        return f'-c "truncate {length}"', False
    return f'-c "{kind} {start(size, variant)} {length}"', True


def made(op, size: int) -> frozenset:
    """The blocks past the end `op` preallocates on a file of `size` bytes."""
    if (op.family, op.variant) == ("falloc-eof", "keep-size"):
        return blocks_of(size, 2 * BLOCK)
    if op.family == FAMILY and PREALLOCS[op.variant][0] != "truncate":
        return blocks_of(start(size, op.variant), PREALLOCS[op.variant][2])
    return frozenset()


def kept(op, node, data: bytes) -> frozenset:
    """The blocks the model owes of `node` after `op` left it `data`."""
    old = len(node.data)
    if truncates(op):
        return node.prealloc if len(data) > old else frozenset(b for b in node.prealloc if b * BLOCK < len(data))
    if op.family in KEEPING or (op.family, op.variant) in (("falloc", "default"), ("falloc", "keep-size")):
        return node.prealloc | made(op, old)
    return frozenset()


def truncates(op) -> bool:
    """Whether `op` sets the size: a new size not above the old frees the blocks past it."""
    if op.family == FAMILY:
        return PREALLOCS[op.variant][0] == "truncate"
    return op.family in SHRINKING and not (op.family == "holes" and op.variant.startswith("punch"))


def changed(op, node, data: bytes):
    """`node` with the contents `data` `op` left, and the blocks it keeps."""
    return replace(node, data=data, prealloc=kept(op, node, data))


def covered(extents) -> frozenset:
    """The blocks the extents (logical offset, length) cover: what fiemap says a file has."""
    return Blocks(frozenset().union(*(blocks_of(offset, length) for offset, length in extents)))


EXTENTS_SOURCE = (
    "relied on (fstests generic/483, generic/677, btrfs/211): fallocate(2) KEEP_SIZE allocates blocks past the end, "
    "metadata fsync flushes; ext4 and xfs journal the extent change with the inode, btrfs logs the extents past "
    "i_size with it (471d557afed1, f135cea30de5), f2fs writes the inode's node blocks that hold them; each kept them "
    "after fsync and recovery on Linux 6.18 (docs/generate.md). fdatasync owes none: no read needs them")


def owed_extents(ctx) -> list:
    """`fsync-extents` (oracle.py): after fsync of a file (an `oracle.Context`), the blocks it
    has preallocated past its end (or had, before a truncate up took them in)."""
    blocks = ctx.tree.inode(ctx.path).prealloc
    return [(ctx.path, "extents", Blocks(blocks))] if blocks else []
