"""A bisect's command line checked and resolved: the user's tree, its two commits in the order
git wants them, the clone it runs in, what its directory records.

    rev = revisions(tree, good="v5.10", bad="v5.11", fixed=False)   # UsageError if they cannot be bisected
    clone = clone_for(tree)                                          # in plugpull's cache, made on first use
"""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from plugpull.bisect.engine import BROKE, FIXED, Terms
from plugpull.bisect.git import Clone, check_tree, is_ancestor, resolve
from plugpull.errors import UsageError
from plugpull.paths import cache_dir


@dataclass(frozen=True)
class Revisions:
    tree: Path
    good: str
    bad: str
    terms: Terms

    @property
    def new(self) -> str:
        """The commit in the state a commit brought: the bad one, or the good one with --fixed."""
        return self.good if self.terms is FIXED else self.bad

    @property
    def old(self) -> str:
        return self.bad if self.terms is FIXED else self.good


def revisions(tree: Path, good: str, bad: str, fixed: bool) -> Revisions:
    """--tree, --good and --bad checked: two commits of a git work tree, the older an ancestor
    of the newer (the good of the bad; with --fixed, the bad of the good)."""
    tree = check_tree(tree)
    good_id, bad_id = resolve(tree, good, "--good"), resolve(tree, bad, "--bad")
    if good_id == bad_id:
        raise UsageError(f"--good {good} and --bad {bad} are one commit ({good_id[:12]})")
    rev = Revisions(tree, good_id, bad_id, FIXED if fixed else BROKE)
    if not is_ancestor(tree, rev.old, rev.new):
        if fixed:
            raise UsageError(f"--bad {bad} is not an ancestor of --good {good}: with --fixed the bad commit "
                             "is the older one")
        raise UsageError(f"--good {good} is not an ancestor of --bad {bad} (to find the commit that fixed it, "
                         "add --fixed)")
    return rev


def clone_for(tree: Path) -> Clone:
    """The tree's private clone in plugpull's cache, one per tree (`bisect/NAME/src`): every
    bisect of it builds with its objects beside it (`bisect/NAME/out`), so its steps are
    incremental builds, and its first build finds a Debian build's objects of the same source in
    ccache. Its folder's lock is held while a bisect runs in it."""
    digest = hashlib.sha256(str(tree).encode()).hexdigest()[:16]
    entry = cache_dir() / "bisect" / f"{tree.name}-{digest}"
    if (entry / "repo" / ".git").is_dir() and not (entry / "src").exists():
        (entry / "repo").rename(entry / "src")  # a clone made before its objects were kept beside it
    return Clone(entry / "src")


def settings(rev: Revisions, test: Path, test_bytes: bytes, runs: int, fs: str | None) -> dict:
    """What a bisect's directory records of it; a directory recording other settings is another bisect's."""
    return {"tree": str(rev.tree), "good": rev.good, "bad": rev.bad, "fixed": rev.terms is FIXED,
            "test": str(Path(test).absolute()), "test_sha256": hashlib.sha256(test_bytes).hexdigest(),
            "runs": runs, "fs": fs}
