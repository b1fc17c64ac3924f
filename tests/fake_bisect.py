"""A toy kernel tree for plugpull bisect's tests, and fakes at the engine's seam: a build that
reads the clone's checked-out `level`, a judge that fails from a level on, the command with
them in place of the kernel build, the guest and the backend."""

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from plugpull.bisect import BisectPlan, Journal, Judged, Untestable, clone_for, revisions, settings
from plugpull.errors import InfraError

COMMITS = 9  # c1 .. c9
GIT_ENV = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@example.org"}


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch) -> tuple[Path, list[str]]:
    """A repo whose commit cN writes N into `level`; its commit ids, c1 first."""
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    tree = tmp_path / "linux"
    tree.mkdir()
    git(tree, "init", "-q", "-b", "main")
    for n in range(1, COMMITS + 1):
        (tree / "level").write_text(f"{n}\n")
        git(tree, "add", "level")
        git(tree, "commit", "-q", "-m", f"c{n}")
    return tree, git(tree, "rev-list", "--reverse", "HEAD").split()


def snapshot(tree: Path) -> dict:
    """Every file under the tree, .git too: its bytes' digest and its mtime."""
    return {str(p.relative_to(tree)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(tree.rglob("*")) if p.is_file()}


class Fakes:
    """build: the clone's checked-out `level` (asserting git checked out the commit asked);
    judge: FAIL from level `broke` on (or, `fixed`, PASS from it)."""

    def __init__(self, clone: Path, broke: int, fixed: bool = False, untestable=(), harness_at=None):
        self.clone, self.broke, self.fixed = clone, broke, fixed
        self.untestable, self.harness_at = set(untestable), harness_at
        self.built: list[int] = []

    def build(self, commit: str) -> int:
        assert git(self.clone, "rev-parse", "HEAD") == commit
        level = int((self.clone / "level").read_text())
        self.built.append(level)
        if level in self.untestable:
            raise Untestable(f"build failed at level {level}")
        return level

    def judge(self, level: int) -> Judged:
        if level == self.harness_at:
            raise InfraError("qemu-system-x86_64 is missing")
        failing = (level >= self.broke) != self.fixed
        return Judged(not failing, "FAIL 1/1" if failing else "PASS 3/3")


def plan_of(tree, good, bad, out, fixed=False) -> BisectPlan:
    rev = revisions(tree, good, bad, fixed)
    clone = clone_for(rev.tree).ensure(rev.tree)
    out.mkdir(exist_ok=True)
    return BisectPlan(clone, Journal(out, settings(rev, Path("t.sh"), b"", 3, None)), rev.terms, rev.new, rev.old)


@pytest.fixture
def cli(repo, tmp_path, monkeypatch):
    """`plugpull bisect` with the fakes in place of the kernel build, the guest and the backend;
    the test fails from level made["broke"] on (6 unless a test sets it; made["fixed"]: passes)."""
    import plugpull.bisect.testers as testers
    import plugpull.cli.bisect as command
    made = {"broke": 6, "fixed": False}

    def builder(clone):
        made["fakes"] = Fakes(clone, broke=made["broke"], fixed=made["fixed"])
        return made["fakes"].build

    monkeypatch.setattr(testers, "builder", builder)
    monkeypatch.setattr(testers, "script_judge", lambda text, runs, accel, backend: lambda k: made["fakes"].judge(k))
    monkeypatch.setattr(command, "guest_backend", lambda args: None)
    test = tmp_path / "repro.sh"
    test.write_text("#!/bin/sh\necho PASS\n")
    monkeypatch.chdir(tmp_path)
    return repo, test, made
