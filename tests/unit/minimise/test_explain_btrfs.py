"""btrfs culprit writes named from a real mkfs.btrfs image (made on the host) and from
hand-built block headers. No VM."""

import shutil
import struct
import subprocess

import pytest

from plugpull.minimise.explain import _kind
from plugpull.minimise.explain_btrfs import HEADER, SB_MAGIC, SUPERBLOCK_COPIES, TREE_LOG, btrfs_layout, btrfs_meaning


@pytest.fixture
def image(tmp_path):
    if shutil.which("mkfs.btrfs") is None:
        pytest.skip("mkfs.btrfs is not installed (make deps installs btrfs-progs)")
    path = tmp_path / "btrfs.img"
    with open(path, "wb") as f:
        f.truncate(256 << 20)
    subprocess.run(["mkfs.btrfs", "-q", "-f", str(path)], check=True, capture_output=True)
    return path


def header(fsid: bytes, owner: int, level: int = 0, generation: int = 7, bytenr: int = 30 << 20) -> bytes:
    return HEADER.pack(bytes(32), fsid, bytenr, 0, bytes(16), generation, owner, 3, level) + bytes(64)


def test_the_superblock_and_tree_blocks_of_a_real_image(image):
    layout = btrfs_layout(image)
    assert len(layout["fsid"]) == 16 and layout["generation"] >= 1
    with open(image, "rb") as f:
        f.seek(SUPERBLOCK_COPIES[0])
        sb = f.read(4096)
    assert btrfs_meaning(layout, SUPERBLOCK_COPIES[0], sb) == f"superblock (generation {layout['generation']})"
    assert btrfs_meaning(layout, SUPERBLOCK_COPIES[1], b"") == "superblock mirror 1"
    assert btrfs_meaning(layout, 40 << 20, header(layout["fsid"], 5, level=1)) == \
        "tree block of the fs tree (level 1, 3 items, generation 7, logical 31457280)"
    assert btrfs_meaning(layout, 40 << 20, header(layout["fsid"], TREE_LOG)).startswith("tree block of the log tree")
    assert btrfs_meaning(layout, 40 << 20, header(layout["fsid"], 257)).startswith("tree block of the subvolume 257")


def test_a_block_of_another_filesystem_or_plain_data_is_not_a_tree_block(image):
    layout = btrfs_layout(image)
    other = bytes(b ^ 0xFF for b in layout["fsid"])
    assert btrfs_meaning(layout, 40 << 20, header(other, 2)) == "data, or a block that is not a tree block"
    assert btrfs_meaning(layout, 40 << 20, b"hello world") == "data, or a block that is not a tree block"


def test_an_image_without_btrfs_has_no_layout(tmp_path):
    path = tmp_path / "zero.img"
    path.write_bytes(bytes(128 << 10))
    assert btrfs_layout(path) == {}
    assert btrfs_layout(tmp_path / "missing.img") == {}
    fake = bytearray(128 << 10)
    fake[SUPERBLOCK_COPIES[0] + 0x40:SUPERBLOCK_COPIES[0] + 0x48] = SB_MAGIC
    struct.pack_into("<Q", fake, SUPERBLOCK_COPIES[0] + 0x48, 9)
    path.write_bytes(bytes(fake))
    assert btrfs_layout(path)["generation"] == 9


def test_filesystem_configurations_are_read_as_their_on_disk_kind():
    assert (_kind("xfs-2008"), _kind("ext3"), _kind("btrfs"), _kind("zfs")) == ("xfs", "ext4", "btrfs", "zfs")
