"""What a btrfs culprit write is: a superblock copy with its generation, a tree block with
its owner tree, level and generation, or data. Read from the base image's superblock and the
write's own bytes: a tree block starts with a header that carries the filesystem's fsid."""

import struct
from pathlib import Path

SUPERBLOCK_COPIES = (64 << 10, 64 << 20, 256 << 30)
SB_MAGIC = b"_BHRfS_M"
SB_MAGIC_AT, SB_FSID_AT, SB_GENERATION_AT = 0x40, 0x20, 0x48
HEADER = struct.Struct("<32s16sQQ16sQQIB")  # csum, fsid, bytenr, flags, chunk uuid, generation, owner, nritems, level
TREES = {1: "root tree", 2: "extent tree", 3: "chunk tree", 4: "device tree", 5: "fs tree",
         6: "root tree directory", 7: "checksum tree", 8: "quota tree", 9: "uuid tree",
         10: "free-space tree", 11: "block-group tree"}
TREE_LOG = (1 << 64) - 6
DATA_RELOC = (1 << 64) - 9


def btrfs_layout(image: Path) -> dict:
    """The primary superblock's fsid and generation, or {} when the image holds no btrfs."""
    try:
        with open(image, "rb") as f:
            f.seek(SUPERBLOCK_COPIES[0])
            sb = f.read(4096)
    except OSError:
        return {}
    if sb[SB_MAGIC_AT:SB_MAGIC_AT + 8] != SB_MAGIC:
        return {}
    (generation,) = struct.unpack_from("<Q", sb, SB_GENERATION_AT)
    return {"fsid": sb[SB_FSID_AT:SB_FSID_AT + 16], "generation": generation}


def _tree_name(owner: int) -> str:
    if owner in TREES:
        return TREES[owner]
    if owner == TREE_LOG:
        return "log tree (fsync)"
    if owner == DATA_RELOC:
        return "data relocation tree"
    return f"subvolume {owner} tree" if 256 <= owner < (1 << 48) else f"tree {owner}"


def btrfs_meaning(layout: dict, offset: int, data: bytes) -> str:
    if offset in SUPERBLOCK_COPIES:
        copy = SUPERBLOCK_COPIES.index(offset)
        what = "superblock" if copy == 0 else f"superblock mirror {copy}"
        if data[SB_MAGIC_AT:SB_MAGIC_AT + 8] == SB_MAGIC:
            (generation,) = struct.unpack_from("<Q", data, SB_GENERATION_AT)
            what += f" (generation {generation})"
        return what
    if len(data) >= HEADER.size:
        _, fsid, bytenr, _, _, generation, owner, nritems, level = HEADER.unpack_from(data)
        if fsid == layout.get("fsid"):
            return (f"tree block of the {_tree_name(owner)} (level {level}, {nritems} items, generation "
                    f"{generation}, logical {bytenr})")
    return "data, or a block that is not a tree block"
