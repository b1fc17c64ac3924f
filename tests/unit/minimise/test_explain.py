import shutil
import struct
import subprocess

import pytest

from plugpull.minimise.explain import JBD2_MAGIC, XLOG_MAGIC, ext4_layout, ext4_meaning, xfs_layout, xfs_meaning


def fresh(tmp_path, mkfs, mib):
    if shutil.which(mkfs[0]) is None:
        pytest.skip(f"{mkfs[0]} is not installed (make deps)")
    image = tmp_path / "fs.img"
    with open(image, "wb") as f:
        f.truncate(mib << 20)
    subprocess.run([*mkfs, str(image)], check=True, capture_output=True)
    return image


def test_ext4_blocks_are_named(tmp_path):
    layout = ext4_layout(fresh(tmp_path, ["mkfs.ext4", "-q", "-F", "-b", "4096"], 64))
    size, regions, journal, _ = layout
    assert size == 4096 and journal
    assert ext4_meaning(layout, 0, b"") == "group 0 superblock (block 0)"
    assert "group 0 group descriptors" in ext4_meaning(layout, 4096, b"")
    first = min(journal) * size
    commit = struct.pack(">III", JBD2_MAGIC, 2, 17)
    assert ext4_meaning(layout, first, commit) == "journal commit block (transaction 17)"
    assert ext4_meaning(layout, first, bytes(16)) == "journal block (a logged copy of metadata)"
    assert ext4_meaning(layout, 60 << 20, b"hello").endswith("directory or file data (free in the base image)")


def test_xfs_blocks_are_named(tmp_path):
    sb = xfs_layout(fresh(tmp_path, ["mkfs.xfs", "-q", "-f"], 300))
    assert sb["blocksize"] == 4096
    assert xfs_meaning(sb, 512, b"") == "AG 0 AGF"
    assert xfs_meaning(sb, sb["agblocks"] * 4096 + 1024, b"") == "AG 1 AGI"
    ag, agbno = sb["logstart"] >> sb["agblklog"], sb["logstart"] & ((1 << sb["agblklog"]) - 1)
    log = (ag * sb["agblocks"] + agbno) * 4096
    header = struct.pack(">II", XLOG_MAGIC, 3)
    assert xfs_meaning(sb, log + 1024, header) == \
        f"internal log, basic block 2 of {sb['logblocks'] * 8}: log record header, cycle 3"
    assert xfs_meaning(sb, log + 1024, b"x" * 8).endswith("log record data")
    assert xfs_meaning(sb, 40 * 4096, b"IAB3....") == "AG 0 block 40: inode btree"


def test_an_ext4_data_block_names_its_file(tmp_path):
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "hello").write_bytes(b"x" * 8192)
    image = fresh(tmp_path, ["mkfs.ext4", "-q", "-F", "-b", "4096", "-d", str(tmp_path / "tree")], 64)
    block = int(subprocess.run(["debugfs", "-R", "bmap /hello 0", str(image)], capture_output=True,
                               text=True).stdout.split()[0])
    assert ext4_meaning(ext4_layout(image), block * 4096, b"x").endswith(", /hello)")
