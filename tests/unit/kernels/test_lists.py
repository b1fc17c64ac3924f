"""The package lists against a made-up archive on 127.0.0.1, fetched by apt for real: a
refresh that fails leaves the last good lists in use; lists holding junk are fetched again."""

import os
import shutil
from dataclasses import replace

import pytest

from tests.fake_apt import NEW, OLD
from tests.fake_archive import fake_archive
from plugpull.cli.kernels import print_offered
from plugpull.errors import UsageError
from plugpull.kernels.apt import ArchiveUnreachable
from plugpull.kernels.resolve import Kernels

pytestmark = pytest.mark.skipif(not all(shutil.which(t) for t in ("apt-get", "apt-cache", "gpg", "gpgv")),
                                reason="needs apt-get, apt-cache, gpg and gpgv")

UNREACHABLE = "http://127.0.0.1:9/debian"


@pytest.fixture
def archive(tmp_path, monkeypatch):
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with fake_archive(tmp_path / "archive") as good:
        yield good


def _releases(kernels) -> set:
    return {o.release for o in kernels.offers()}


def test_a_failed_refresh_leaves_the_last_good_lists_in_use(tmp_path, capsys, monkeypatch):
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "kernels"
    with fake_archive(tmp_path / "archive") as archive:
        good = Kernels(root, archive=archive)
        assert good.refresh(force=True) and _releases(good) == {OLD, NEW}
        age = good.apt.index_age()
    bad = Kernels(root, archive=archive)  # the same archive, no longer answering
    assert bad.refresh(force=True) is False  # a warning: the old lists serve
    assert _releases(bad) == {OLD, NEW} and bad.apt.archive.uri == archive.uri
    later = Kernels(root, archive=archive)
    assert later.apt.index_age() >= age  # the failed refresh set no "fresh" mark
    assert _releases(later) == {OLD, NEW}
    print_offered(later)
    out = capsys.readouterr().out
    assert f"offered by {archive.uri} " in out and "2 kernels in 2 series" in out
    assert [p.name for p in root.joinpath("apt").iterdir() if p.name.startswith("gen-")] != []


def test_lists_of_another_archive_are_never_used_for_this_one(archive, tmp_path, monkeypatch):
    """Fresh lists fetched from one archive are none for another (PLUGPULL_DEBIAN_MIRROR set
    since): the other's are fetched, and a bad or unreachable address is said, not ignored."""
    root = tmp_path / "kernels"
    assert Kernels(root, archive=archive).refresh(force=True)
    other = Kernels(root, archive=replace(archive, uri=UNREACHABLE))
    assert other.apt.index_age() is None
    with pytest.raises(ArchiveUnreachable, match=UNREACHABLE):
        other.refresh()
    monkeypatch.setenv("PLUGPULL_DEBIAN_MIRROR", "nonsense")
    with pytest.raises(UsageError, match="PLUGPULL_DEBIAN_MIRROR='nonsense'"):
        Kernels(root).refresh()
    assert _releases(Kernels(root, archive=archive)) == {OLD, NEW}  # the good lists are still there


def test_a_failed_first_refresh_leaves_no_lists(archive, tmp_path):
    bad = Kernels(tmp_path / "kernels", archive=replace(archive, uri=UNREACHABLE))
    with pytest.raises(ArchiveUnreachable, match="cannot be reached"):
        bad.refresh(force=True)
    assert bad.apt.index_age() is None and list((tmp_path / "kernels" / "apt").iterdir()) == []


def test_lists_holding_junk_are_fetched_again(archive, tmp_path):
    kernels = Kernels(tmp_path / "kernels", archive=archive)
    kernels.refresh(force=True)
    live = kernels.apt.current().root
    for lists in (live / "state" / "lists").glob("*Packages*"):
        lists.write_bytes(b"\x1f\x8b junk")
    assert _releases(kernels) == {OLD, NEW}
    assert kernels.apt.current().root != live


def test_lists_gone_from_the_cache_are_fetched_again(archive, tmp_path):
    kernels = Kernels(tmp_path / "kernels", archive=archive)
    kernels.refresh(force=True)
    live = kernels.apt.current().root
    for lists in (live / "state" / "lists").glob("*Packages*"):
        lists.unlink()
    assert _releases(kernels) == {OLD, NEW} and kernels.apt.current().root != live


@pytest.mark.parametrize("junk", ["nowhere", "../elsewhere", "a-file"])
def test_a_live_link_naming_nothing_usable_counts_as_no_lists(archive, tmp_path, junk):
    apt_root = tmp_path / "kernels" / "apt"
    apt_root.mkdir(parents=True)
    (apt_root / "a-file").write_text("x")
    os.symlink(junk, apt_root / "live")
    kernels = Kernels(tmp_path / "kernels", archive=archive)
    assert kernels.apt.index_age() is None
    assert kernels.refresh() and _releases(kernels) == {OLD, NEW}
    assert (apt_root / "a-file").read_text() == "x"  # not plugpull's: left alone


def test_a_table_without_rows_is_its_header(capsys):
    from plugpull.cli.common import print_table
    print_table(("spec", "newest"), [])  # was TypeError: 'int' object is not iterable
    assert capsys.readouterr().out == "spec  newest\n"


@pytest.mark.parametrize("specs, words", [(["debian:6.12", "debian:6.12"], "kernels: debian:6.12 is given twice"),
                                          (["debian:6.12", "debian:6.12.117-1"],
                                           f"kernels: debian:6.12 and debian:6.12.117-1 are one kernel ({OLD})"),
                                          (["host"], "kernels host: not a Debian kernel")])
def test_kernels_refuses_a_kernel_named_twice_before_fetching(specs, words, archive, tmp_path, capsys, monkeypatch):
    import functools
    import plugpull.kernels
    from plugpull import cli
    root = tmp_path / "kernels"
    monkeypatch.setattr(plugpull.kernels, "Kernels", functools.partial(Kernels, root, archive=archive))
    assert cli.main(["kernels", *specs]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "--kernel" not in err, err
    assert not (root / "trees").exists()
