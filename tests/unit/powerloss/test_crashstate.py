import errno
import hashlib
import os

import pytest

from plugpull.powerloss.crashstate import content_digest, image_sha256, materialize
from plugpull.powerloss.models import Piece, plan
from plugpull.powerloss.writelog import LogWriter, iter_entries
from plugpull.sparse import copy_sparse

MIB = 1 << 20


def make_base(path, size=MIB):
    """A sparse image with data at its first 4 KiB and at 512 KiB; holes elsewhere."""
    with open(path, "wb") as f:
        f.truncate(size)
        f.write(b"\x11" * 4096)
        f.seek(512 * 1024)
        f.write(b"\x22" * 4096)
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fill(byte, sectors):
    return bytes([byte]) * (512 * sectors)


def ramp(first, sectors):
    """Sectors that differ from each other: first, first+1, ..."""
    return b"".join(fill(first + i, 1) for i in range(sectors))


@pytest.fixture
def world(tmp_path):
    """Base image and log: w0 @8 (2 sectors), w1 @100 (4 distinct sectors), FLUSH, discard @0 (4), w3 @2000 (1)."""
    base = make_base(tmp_path / "base.img")
    log = tmp_path / "log"
    with LogWriter(log) as w:
        w.write(8, fill(0xA0, 2))
        w.write(100, ramp(0xB0, 4))
        w.flush()
        w.discard(0, 4)
        w.write(2000, fill(0xC0, 1))
    return base, log, list(iter_entries(log))


def expected_image(base, edits):
    image = bytearray(base.read_bytes())
    for offset, data in edits:
        image[offset:offset + len(data)] = data
    return bytes(image)


def test_copy_sparse_is_exact(tmp_path):
    base = make_base(tmp_path / "base.img")
    copy_sparse(base, tmp_path / "copy.img")
    assert (tmp_path / "copy.img").read_bytes() == base.read_bytes()


def test_copy_sparse_keeps_holes_of_a_big_image(tmp_path):
    big = tmp_path / "big.img"
    with open(big, "wb") as f:
        f.truncate(512 * MIB)
        f.seek(100 * MIB)
        f.write(b"x" * 4096)
    copy = tmp_path / "copy.img"
    copy_sparse(big, copy)
    assert os.path.getsize(copy) == 512 * MIB
    assert os.stat(copy).st_blocks * 512 < 4 * MIB
    with open(copy, "rb") as f:
        f.seek(100 * MIB - 1)
        assert f.read(4098) == b"\0" + b"x" * 4096 + b"\0"


def test_copy_sparse_without_kernel_help(tmp_path, monkeypatch):
    """No copy_file_range, no SEEK_DATA: still exact, and zero chunks still become holes."""
    big = tmp_path / "big.img"
    with open(big, "wb") as f:
        f.truncate(16 * MIB)
        f.seek(5 * MIB + 3)
        f.write(b"y" * 5000)

    def refuse(*args):
        raise OSError(errno.EXDEV, "cross-device")

    monkeypatch.setattr(os, "copy_file_range", refuse)
    monkeypatch.delattr(os, "SEEK_DATA")
    copy = tmp_path / "copy.img"
    copy_sparse(big, copy)
    assert copy.read_bytes() == big.read_bytes()
    assert os.stat(copy).st_blocks * 512 < 4 * MIB


def test_copy_sparse_replaces_existing_file(tmp_path):
    base = make_base(tmp_path / "base.img")
    target = tmp_path / "copy.img"
    target.write_bytes(b"\xff" * (2 * MIB))
    copy_sparse(base, target)
    assert target.read_bytes() == base.read_bytes()


def test_image_sha256_hashes_holes_as_zeros(tmp_path):
    base = make_base(tmp_path / "base.img", size=3 * MIB + 512)
    assert image_sha256(base) == sha(base.read_bytes())


def test_materialize_prefix_puts_every_byte_in_place(tmp_path, world):
    base, log, entries = world
    pieces = plan(entries, len(entries), "prefix", 0)
    out = tmp_path / "crash.img"
    digest = materialize(base, log, pieces, out)
    want = expected_image(base, [(8 * 512, fill(0xA0, 2)), (100 * 512, ramp(0xB0, 4)),
                                 (0, bytes(4 * 512)), (2000 * 512, fill(0xC0, 1))])
    got = out.read_bytes()
    assert got == want
    assert got[4 * 512:8 * 512] == b"\x11" * 2048
    assert digest == sha(want) == image_sha256(out)


def test_materialize_applies_only_the_listed_sectors(tmp_path, world):
    base, log, entries = world
    out = tmp_path / "torn.img"
    materialize(base, log, [Piece(1, 101, 2)], out)
    want = expected_image(base, [(101 * 512, ramp(0xB1, 2))])
    assert out.read_bytes() == want
    assert out.read_bytes()[100 * 512:101 * 512] == bytes(512)


def test_materialize_in_plan_order(tmp_path):
    base = make_base(tmp_path / "base.img")
    log = tmp_path / "log"
    with LogWriter(log) as w:
        w.write(16, fill(1, 4))
        w.write(16, fill(2, 4))
    out = tmp_path / "out.img"
    materialize(base, log, [Piece(1, 16, 4), Piece(0, 16, 2)], out)
    assert out.read_bytes()[16 * 512:20 * 512] == fill(1, 2) + fill(2, 2)


def test_same_plan_same_image(tmp_path, world):
    base, log, entries = world
    pieces = plan(entries, len(entries), "torn", 5)
    first = materialize(base, log, pieces, tmp_path / "a.img")
    second = materialize(base, log, pieces, tmp_path / "b.img")
    assert first == second
    assert (tmp_path / "a.img").read_bytes() == (tmp_path / "b.img").read_bytes()


def test_dropping_a_write_changes_the_image(tmp_path, world):
    base, log, entries = world
    full = materialize(base, log, plan(entries, len(entries), "prefix", 0), tmp_path / "prefix.img")
    dropped = materialize(base, log, plan(entries, len(entries), "drop-unflushed", 0), tmp_path / "drop.img")
    assert full != dropped
    image = (tmp_path / "drop.img").read_bytes()
    assert image[2000 * 512:2001 * 512] == bytes(512)
    assert image[:4096] == b"\x11" * 4096


def test_empty_plan_gives_the_base(tmp_path, world):
    base, log, _ = world
    assert materialize(base, log, [], tmp_path / "same.img") == image_sha256(base)


def test_materialize_replaces_atomically_and_cleans_up(tmp_path, world):
    base, log, entries = world
    out = tmp_path / "out" / "crash.img"
    out.parent.mkdir()
    out.write_bytes(b"old")
    materialize(base, log, plan(entries, 2, "prefix", 0), out)
    assert os.listdir(out.parent) == ["crash.img"]
    assert os.path.getsize(out) == MIB
    out.write_bytes(b"old")
    with pytest.raises(ValueError, match="missing"):
        materialize(base, log, [Piece(99, 0, 1)], out)
    assert out.read_bytes() == b"old"
    assert os.listdir(out.parent) == ["crash.img"]


@pytest.mark.parametrize("piece", [Piece(0, 7, 2), Piece(0, 9, 2), Piece(2, 0, 1)],
                         ids=["before-entry", "after-entry", "flush-entry"])
def test_bad_pieces_are_refused(tmp_path, world, piece):
    base, log, _ = world
    with pytest.raises(ValueError):
        materialize(base, log, [piece], tmp_path / "bad.img")


def test_piece_past_the_image_is_refused(tmp_path):
    base = make_base(tmp_path / "base.img")
    log = tmp_path / "log"
    with LogWriter(log) as w:
        w.write(MIB // 512, fill(1, 1))
    with pytest.raises(ValueError, match="past the image"):
        materialize(base, log, [Piece(0, MIB // 512, 1)], tmp_path / "bad.img")


def test_content_digest_depends_on_contents_only(tmp_path):
    sparse = tmp_path / "sparse.img"
    with open(sparse, "wb") as f:
        f.truncate(8 << 20)
        f.seek(3 << 20)
        f.write(b"data in the middle")
        f.seek((5 << 20) + 100)
        f.write(b"more")
    dense = tmp_path / "dense.img"
    dense.write_bytes(sparse.read_bytes())
    assert content_digest(sparse) == content_digest(dense)
    changed = tmp_path / "changed.img"
    data = bytearray(sparse.read_bytes())
    data[(5 << 20) + 101] ^= 1
    changed.write_bytes(bytes(data))
    assert content_digest(changed) != content_digest(sparse)
    longer = tmp_path / "longer.img"
    longer.write_bytes(sparse.read_bytes() + bytes(4096))
    assert content_digest(longer) != content_digest(sparse)
