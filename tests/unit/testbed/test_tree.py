"""The kernel-shaped tree: deterministic, of the seeds' shape, and what the guest's tar
extracts is what the manifest says."""

import hashlib
import io
import lzma
import shutil
import subprocess
import tarfile

import pytest

from plugpull.errors import ToolMissing
from plugpull.testbed.tree import KERNEL_DIRS, KERNEL_FILES, TreeShape, debian_payload, payload


def test_shape_scales_like_the_kernel_tree():
    full = TreeShape()
    assert (full.files, full.dirs) == (KERNEL_FILES, KERNEL_DIRS)
    small = TreeShape(2000)
    assert small.dirs == round(2000 * KERNEL_DIRS / KERNEL_FILES)
    assert TreeShape(2000, seed=1).key() != TreeShape(2000, seed=2).key()


def test_same_shape_same_tree_and_the_manifest_matches_the_tar(tmp_path):
    a = payload.__wrapped__(TreeShape(300, seed=5), tmp_path / "a")
    b = payload.__wrapped__(TreeShape(300, seed=5), tmp_path / "b")
    assert a.manifest == b.manifest and a.tar.read_bytes() == b.tar.read_bytes()
    assert len(a.manifest) == 300 and a.tar.stat().st_size % 512 == 0
    assert abs(a.bytes - TreeShape(300).total_bytes) < 300 * 2
    out = tmp_path / "x"
    out.mkdir()
    busybox = shutil.which("busybox")
    if busybox:
        subprocess.run([busybox, "tar", "-xf", str(a.tar), "-C", str(out)], check=True)
    else:
        with tarfile.open(a.tar) as t:
            t.extractall(out, filter="data")
    for path, digest in a.manifest.items():
        assert hashlib.sha256((out / path).read_bytes()).hexdigest() == digest
    dirs = {p.rsplit("/", 1)[0] for p in a.manifest}
    assert len(dirs) > 10 and max(d.count("/") for d in dirs) <= 5


def test_debian_source_is_unpacked_with_its_manifest(tmp_path):
    src = tmp_path / "linux-source-6.1.tar.xz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in (("linux-source-6.1/Makefile", b"all:\n"), ("linux-source-6.1/fs/xfs/xfs.c", b"xfs\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    src.write_bytes(lzma.compress(buf.getvalue()))
    p = debian_payload.__wrapped__(src, tmp_path / "cache")
    assert p.root == "linux-source-6.1" and p.bytes == 9
    assert p.manifest["linux-source-6.1/Makefile"] == hashlib.sha256(b"all:\n").hexdigest()
    assert p.tar.stat().st_size % 512 == 0
    with pytest.raises(ToolMissing, match="linux-source-6.1"):
        debian_payload.__wrapped__(tmp_path / "missing.tar.xz", tmp_path / "cache")
