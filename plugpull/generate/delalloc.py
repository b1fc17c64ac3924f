"""Which writes ext4 keeps in delayed allocation: what its rename over an existing file forces
out before the rename commits (oracle rule `ext4-replace-via-rename`, docs/generate.md)."""

from plugpull.generate.ops import DATA_FAMILIES, plain, write_range
from plugpull.generate.sizes import RANGED
from plugpull.generate.space import Workload
from plugpull.generate.tree import BLOCK

FALLOCATES = ("falloc", "falloc-eof", "tiny")  # the families with a fallocate that may allocate past the end


def delayed_only(workload: Workload, rename: int) -> bool:
    """Whether all that was written to the file step `rename` renames over another since a point
    last made its data durable was in delayed allocation: buffered writes wholly into blocks the
    file did not have, which ext4 reserves without allocating (i_reserved_data_blocks). Those
    are what ext4_rename's call of ext4_alloc_da_blocks allocates, and an allocation puts its
    blocks on the ordered list of the running transaction (ext4_map_blocks, EXT4_MAP_NEW), which
    the rename's commit writes first. An overwrite of allocated blocks, a direct-I/O or mmap
    write, fallocate, truncate, collapse or insert: nothing orders their data before the rename.
    Conservative: every block below the largest size the file had by then counts as allocated,
    and every block once fallocated past its end."""
    trees, ino = workload.trees, workload.trees[rename - 1].paths[workload.steps[rename - 1].op.args[0]]
    start = _last_persisted(workload, ino, rename)
    had = max((len(t.inodes[ino].data) for t in trees[:start + 1] if ino in t.inodes), default=0)
    allocated, delayed = set(range(-(-had // BLOCK))), set()
    for k in range(start + 1, rename):
        op = plain(workload.steps[k - 1].op)
        if not op.args or trees[k - 1].paths.get(op.args[0]) != ino:
            if trees[k - 1].inodes.get(ino) not in (None, trees[k].inodes.get(ino)):
                return False  # changed by an operation on another name (a rename over it); None: made here
            continue
        if op.family == "rename" and op.variant == "over":
            allocated, delayed = allocated | delayed, set()  # this rename allocated them
        elif op.family == "write":
            offset, length = write_range(op, len(trees[k - 1].inodes[ino].data))
            blocks = set(range(offset // BLOCK, -(-(offset + length) // BLOCK)))
            if blocks & allocated or _fallocated(workload, ino, k):
                return False
            delayed |= blocks
        elif op.family in DATA_FAMILIES:
            return False
    return True


def _last_persisted(workload: Workload, ino: int, before: int) -> int:
    """The last step before `before` after which a point made file `ino`'s data durable: a
    sync, or an fsync, fdatasync or msync of one of its names (0: the setup); not an msync of
    one page, which leaves the others as they were."""
    for j in range(before - 1, 0, -1):
        persist = workload.steps[j - 1].persist
        if persist and persist.kind not in RANGED and (persist.kind == "sync" or
                                                       workload.trees[j].paths.get(persist.path) == ino):
            return j
    return 0


def _fallocated(workload: Workload, ino: int, before: int) -> bool:
    """A fallocate on file `ino` before step `before`: it may have allocated blocks past the end."""
    return any(plain(s.op).family in FALLOCATES and workload.trees[k].paths.get(s.op.args[0]) == ino
               for k, s in enumerate(workload.steps[:before - 1]))
