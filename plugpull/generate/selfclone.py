"""The eleventh table's model (docs/generate.md, "The eleventh table"): a clone of one block of a
file onto another range of the same file (`self-clone`: FICLONERANGE with the file as its own
source, xfs_io `reflink FILE SRC DST LEN` on FILE, as fstests do): what btrfs/098 and
generic/588 need. Plain functions on bytes and the model's step, so that `ops` (which owns the
operation table and its `Op`) can use them.

Two variants, each one block (FICLONERANGE wants block-aligned offsets and, but for a range
that ends at the source's end, length; a range onto itself is EINVAL):
- `to-start`: the file's last block onto its first (098's clone of a later extent to a lower
  offset, into the hole before it after `creat` and `write.past-eof`; 588's clone of part of
  the newest extent to offset 0);
- `past-eof`: the file's second block to its end, which it extends by a block (588's clone of
  the second part of an extent elsewhere, after `write.unaligned` wrote the first two blocks
  anew: its first part is then rewritten by `write.overwrite`).
Both want a file of whole blocks, two at least: on a file of 16 KiB (the setup's), 20 KiB (an
append) or 12 KiB (a write past the end of an empty file) they run; elsewhere the call fails
(EINVAL) and no workload has it. Few rows: each multiplies the seq-3 space."""

from plugpull.generate.reach import clone_step
from plugpull.generate.tree import BLOCK, with_data

SELF_FAMILIES = ("self-clone",)
# variant -> (source offset, destination offset) of the block cloned, from the file's size
SELF_CLONES = {"to-start": lambda size: (size - BLOCK, 0), "past-eof": lambda size: (BLOCK, size)}


def self_fits(size: int) -> bool:
    """Whether a self-clone runs on a file of `size` bytes: whole blocks (an unaligned offset is
    EINVAL), two at least (else the ranges overlap, or there is no second block: EINVAL)."""
    return size % BLOCK == 0 and size >= 2 * BLOCK


def self_cloned(variant: str, data: bytes) -> bytes:
    """The file's contents after the clone (one `self_fits` allows): the destination block holds
    the source block's bytes (a hole's zeros too), the file extended to the destination's end."""
    source, destination = SELF_CLONES[variant](len(data))
    buf = bytearray(data.ljust(destination + BLOCK, b"\0"))
    buf[destination:destination + BLOCK] = data[source:source + BLOCK]
    return bytes(buf)


def self_clone_step(sim, op) -> bool:
    """A self-clone on the model (`ops.Sim`): the file as `self_cloned` leaves it; False where the
    call fails (`self_fits`)."""
    path = op.args[0]
    if not sim.exists(path) or not self_fits(len(sim.tree.inode(path).data)):
        return False
    sim.tree.set_inode(path, with_data(sim.tree.inode(path), self_cloned(op.variant, sim.tree.inode(path).data)))
    return True


# the clone families' steps on the model: the sixth table's between two files, the eleventh's within one
CLONES = {"reflink": clone_step, "copy": clone_step, **dict.fromkeys(SELF_FAMILIES, self_clone_step)}


def self_clone_args(variant: str, size: int) -> str:
    """xfs_io `reflink`'s offsets and length after the source's name, on a file of `size` bytes."""
    source, destination = SELF_CLONES[variant](size)
    return f"{source} {destination} {BLOCK}"
