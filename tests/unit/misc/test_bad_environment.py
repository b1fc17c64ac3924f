"""Bad environments and oversized values, refused in one line with exit 2 before any work,
nothing made: a cache plugpull cannot write in, a 5,000-digit kernel version. No VM."""

import os

import pytest

from tests.cli_run import refused
from plugpull import cli


@pytest.mark.parametrize("where, words", [("{tmp}/afile/cache", ["{tmp}/afile is not a directory"]),
                                          ("/proc/plugpull-cache", ["cannot write in /proc"])])
@pytest.mark.parametrize("argv", [["kernels"], ["generate", "--seq", "1"]])
def test_a_cache_plugpull_cannot_write_in_is_refused(where, words, argv, tmp_path, capsys, monkeypatch):
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("PLUGPULL_CACHE", where.format(tmp=tmp_path))
    refused(argv, capsys, "PLUGPULL_CACHE", *(w.format(tmp=tmp_path) for w in words))
    assert os.listdir(tmp_path) == ["afile"]


def test_a_new_cache_is_made_by_no_refusal_and_none_by_the_check(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "new" / "cache"))
    assert cli.main(["generate", "--seq", "1"]) == 0
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("spec", ["debian:6." + "1" * 5000, "debian:" + "9" * 5000 + ":6.12", "debian:6.12-" + "x" * 500])
def test_an_oversized_kernel_version_is_one_short_line(spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    refused(["kernels", spec], capsys, "is not a kernel version")
    assert not (tmp_path / "cache").exists()
