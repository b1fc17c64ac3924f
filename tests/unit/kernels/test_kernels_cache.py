"""Resolving and caching Debian kernels, offline: a fake apt serves synthetic .debs of both
shapes (one linux-image package; 7.x's binary, modules and base), which are unpacked with
dpkg-deb and indexed with depmod for real."""

import shutil

import pytest

from tests.fake_apt import NEW, OLD, OLD_VERSION, FakeApt, build_debs
from plugpull.errors import ImageError, UsageError
from plugpull.kernels.apt import ArchiveUnreachable
from plugpull.kernels.resolve import Kernels
from plugpull.kernels.store import Package, parse_show, tree_name

@pytest.fixture(scope="module")
def debs(tmp_path_factory) -> dict:
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    return build_debs(tmp_path_factory.mktemp("debs"))


@pytest.fixture
def fake(tmp_path, debs):
    apt = FakeApt(tmp_path / "kernels" / "apt", debs)
    return Kernels(tmp_path / "kernels", apt=apt), apt


def test_a_kernel_is_fetched_once_then_cached(fake):
    kernels, apt = fake
    first = kernels.resolve("debian:6.12")
    assert first.downloaded and apt.downloads == 1 and apt.updates == 1
    assert first.kernel.release == OLD and first.kernel.version == OLD_VERSION
    assert set(first.seconds) == {"resolve", "fetch", "unpack"}
    source = first.source
    assert source.kernel.read_bytes() == b"old kernel" and source.release == OLD
    assert (source.modules_dir / "modules.dep").read_text().startswith("kernel/fs/xfs/xfs.ko.xz:")
    again = kernels.resolve("debian:6.12.117-1")
    assert not again.downloaded and apt.downloads == 1 and apt.updates == 1
    assert again.kernel.path == first.kernel.path
    assert list((kernels.root / "downloads").glob("*/*")) == []  # the .debs are not kept


def test_a_split_kernel_is_indexed_by_depmod(fake):
    kernels, apt = fake
    got = kernels.resolve("debian:7.3")
    assert got.kernel.manifest["shape"] == "split" and set(got.kernel.manifest["packages"]) == {
        f"linux-binary-unsigned-{NEW}", f"linux-modules-{NEW}", f"linux-base-{NEW}"}
    assert got.source.kernel.name == "vmlinuz.unsigned" and got.source.release == NEW
    modules = got.source.modules_dir
    assert (modules / "modules.dep").is_file() and (modules / "modules.builtin").is_file()
    assert [k.release for k in kernels.cached()] == [NEW]


def test_a_download_that_does_not_match_the_index_is_refused(fake):
    kernels, apt = fake
    apt.corrupt = True
    with pytest.raises(ImageError, match="is not the archive's"):
        kernels.resolve("debian:6.12")
    assert kernels.cached() == []


def test_an_unknown_version_fetches_nothing(fake):
    kernels, apt = fake
    with pytest.raises(UsageError, match="the nearest offered is debian:7.3 "):
        kernels.resolve("debian:9.9")
    assert apt.downloads == 0 and not (kernels.root / "trees").exists()


def test_an_unreachable_archive_without_lists_is_said(fake):
    kernels, apt = fake
    apt.reachable = False
    with pytest.raises(ArchiveUnreachable, match="cannot be reached"):
        kernels.resolve("debian:6.12")


def test_an_unreachable_archive_falls_back_on_old_lists_then_on_the_cache(fake):
    kernels, apt = fake
    kernels.resolve("debian:6.12")
    apt.reachable, apt.age = False, 3 * 86400  # stale lists, archive gone: the lists still serve
    assert not kernels.resolve("debian:6.12").downloaded and apt.updates == 2
    with pytest.raises(ArchiveUnreachable):
        kernels.resolve("debian:7.3")  # listed but not cached: the download fails
    apt.age = None  # no lists at all: the cached kernels still serve
    assert kernels.resolve("debian:6.12").kernel.version == OLD_VERSION


def test_fresh_lists_are_not_fetched_again(fake):
    kernels, apt = fake
    apt.age = 3600.0
    kernels.resolve("debian:6.12")
    assert apt.updates == 0
    apt.age = 2 * 86400.0
    kernels.resolve("debian:6.12")
    assert apt.updates == 1


def test_a_fetch_killed_midway_is_swept_by_the_next(fake):
    kernels, apt = fake
    half = kernels.root / "trees" / f".{OLD}_x.abc.tmp"
    (half / "tree").mkdir(parents=True)
    (kernels.root / "downloads" / "old" / "a.deb").parent.mkdir(parents=True)
    (kernels.root / "downloads" / "old" / "a.deb").write_bytes(b"half")
    kernels.resolve("debian:6.12")
    assert not half.exists() and list((kernels.root / "downloads").iterdir()) == []
    assert [k.release for k in kernels.cached()] == [OLD]


def test_the_cache_key_follows_version_and_content():
    p = [Package("linux-image-x", "6.12.117-1", "a" * 64, 1, "f")]
    key = tree_name(OLD, "6.12.117-1", p)
    assert key.startswith(f"{OLD}_6.12.117-1_") and key == tree_name(OLD, "6.12.117-1", list(p))
    assert tree_name(OLD, "6.12.117-1", [Package("linux-image-x", "6.12.117-1", "b" * 64, 1, "f")]) != key
    assert tree_name(OLD, "6.12.117-2", p) != key
    assert ":" not in tree_name(OLD, "1:6.12.117-1", p)


def test_parse_show_reads_stanzas():
    text = ("Package: a\nVersion: 1-1\nSize: 10\nSHA256: " + "c" * 64 + "\nDescription: x\n more\n\n"
            "Package: b\nVersion: 2-1\n")  # no SHA256: not a downloadable package
    assert parse_show(text) == [Package("a", "1-1", "c" * 64, 10, "")]
