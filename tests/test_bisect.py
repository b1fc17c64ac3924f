"""plugpull bisect on a toy git repo: git's own bisect in a private clone, with the build and
the test replaced by fakes at the engine's seam (build(commit), judge(kernel))."""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from plugpull.bisect import FIXED, Journal, Judged, Plan, Untestable, clone_for, revisions, run_bisect, settings
from plugpull.cli import main
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


def plan_of(tree, good, bad, out, fixed=False) -> Plan:
    rev = revisions(tree, good, bad, fixed)
    clone = clone_for(rev.tree).ensure(rev.tree)
    out.mkdir(exist_ok=True)
    return Plan(clone, Journal(out, settings(rev, Path("t.sh"), b"", 3, None)), rev.terms, rev.new, rev.old)


def test_finds_the_first_bad_commit(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[-1], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=6)
    result = run_bisect(plan, fakes.build, fakes.judge, say=lambda line: None)
    assert (result.first, result.subject) == (ids[5], "c6")
    assert len(result.steps) <= 4 and all(s.mark in ("good", "bad") for s in result.steps)
    assert "git bisect start" in (tmp_path / "out" / "git-bisect.log").read_text()


def test_fixed_finds_the_fixing_commit(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[-1], ids[0], tmp_path / "out", fixed=True)
    assert plan.terms is FIXED
    fakes = Fakes(plan.clone.path, broke=4, fixed=True)
    result = run_bisect(plan, fakes.build, fakes.judge, say=lambda line: None)
    assert (result.first, result.subject) == (ids[3], "c4")
    assert {s.mark for s in result.steps} <= {"broken", "fixed"}


def test_an_untestable_commit_is_skipped_and_said(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[-1], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=7, untestable={5})
    said = []
    result = run_bisect(plan, fakes.build, fakes.judge, say=said.append)
    assert result.first == ids[6]
    skipped = [s for s in result.steps if s.mark == "skip"]
    assert [s.subject for s in skipped] == ["c5"] and skipped[0].detail == "build failed at level 5"
    assert any(line.endswith("build failed at level 5 -> skip") for line in said)


def test_only_skipped_commits_left_names_the_candidates(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[3], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=3, untestable={2, 3})
    result = run_bisect(plan, fakes.build, fakes.judge, say=lambda line: None)
    assert result.first is None and set(result.candidates) == {ids[1], ids[2], ids[3]}  # git names the bad one too


def test_a_harness_error_stops_with_no_mark_and_the_rerun_goes_on(repo, tmp_path):
    tree, ids = repo
    out = tmp_path / "out"
    plan = plan_of(tree, ids[0], ids[-1], out)
    first = Fakes(plan.clone.path, broke=6, harness_at=7)
    with pytest.raises(InfraError, match="missing"):
        run_bisect(plan, first.build, first.judge, say=lambda line: None)
    judged = Journal(out, plan.journal.settings).steps()
    assert 7 in first.built and "c7" not in [s.subject for s in judged] and judged
    again = Fakes(plan.clone.path, broke=6)
    said = []
    result = run_bisect(plan_of(tree, ids[0], ids[-1], out), again.build, again.judge, said.append)
    assert result.first == ids[5]
    assert not set(again.built) & {int(s.subject[1:]) for s in judged}  # judged steps not rebuilt
    assert said[0].startswith(f"resumed: {len(judged)} steps")
