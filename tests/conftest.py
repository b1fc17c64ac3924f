"""Fixtures shared by the tests of more than one room."""

from pathlib import Path

import pytest


@pytest.fixture
def own_workdir(tmp_path, monkeypatch) -> Path:
    """The test's own working directory (TMP/w) and cache (TMP/cache), apart, so that what a
    run leaves in the directory is seen without the cache's files."""
    work = tmp_path / "w"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    return work
