"""A directory the user cannot write in or read: a hunt's `hunt.lock` that cannot be opened
for writing, and a cache whose kind cannot be listed, are each bad input (exit 2, one line,
nothing changed), never a harness failure. Tried as root makes them (an immutable file) and
as another user (`nobody`, by setpriv) meets them."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from plugpull.paths import ROOT
from tests.cli_run import exit_code

NOBODY = 65534


@pytest.fixture
def immutable(tmp_path):
    """A hunt directory whose hunt.lock even root cannot open for writing."""
    out = tmp_path / "hunt"
    out.mkdir()
    lock = out / "hunt.lock"
    lock.touch()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", lock], capture_output=True).returncode:
        pytest.skip("chattr +i does not hold here (not root, or a filesystem without it)")
    yield out
    subprocess.run(["chattr", "-i", lock], check=True)


@pytest.mark.parametrize("command", [["hunt", "--seq", "1", "--fs", "ext4", "--sample", "1"]])
def test_a_hunt_lock_that_cannot_be_opened_for_writing_is_refused(immutable, command, capsys, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE", str(immutable.parent / "cache"))
    assert exit_code([*command, "--out", immutable]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hunt.lock cannot be opened for writing" in err and "--out" in err, err
    assert [p.name for p in immutable.iterdir()] == ["hunt.lock"]


def as_nobody(argv, env: dict) -> subprocess.CompletedProcess:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to run as another user")
    return subprocess.run([setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           sys.executable, "-m", "plugpull", *argv], capture_output=True, text=True, cwd="/",
                          env={**os.environ, "HOME": "/", "PYTHONPATH": str(ROOT), **env}, timeout=300)


def test_a_cache_kind_that_cannot_be_read_is_refused_and_nothing_is_removed():
    top = Path(tempfile.mkdtemp(prefix="plugpull-unreadable-"))
    try:
        top.chmod(0o755)
        cache = top / "cache"
        old = [cache / "images" / name for name in ("old-image", "older-image")]  # one would go
        for when, image in enumerate(old):
            image.mkdir(parents=True)
            os.utime(image, (1000 - when, 1000 - when))
        (cache / "kernels" / "trees" / "6.12").mkdir(parents=True)
        for path in (cache, *cache.rglob("*")):
            os.chown(path, NOBODY, NOBODY)
        (cache / "kernels" / "trees").chmod(0)
        done = as_nobody(["kernels", "prune"], {"PLUGPULL_CACHE": str(cache)})
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "kernels/trees cannot be read" in done.stderr, done.stderr
        assert all(image.is_dir() for image in old)
    finally:
        shutil.rmtree(top)
