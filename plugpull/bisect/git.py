"""git for a bisect: the user's tree only read, git's own `git bisect` run in a private clone.

The clone (`git clone --shared --no-checkout`) borrows the user's objects through git's
alternates and has its own refs, index and work tree, so nothing is written in the user's
tree or its .git. Revisions are resolved in the user's tree once, to full commit ids, and
only those ids reach the clone.
"""

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import InfraError, ToolMissing, UsageError
from plugpull.prune import Kind, mark_used, register

TIMEOUT = 1800  # a checkout of a kernel tree on a slow disk
FIRST = re.compile(r"^([0-9a-f]{40}) is the first (\S+) commit", re.M)
ONLY_SKIPPED = "There are only 'skip'ped commits left to test"
ROUGHLY = re.compile(r"roughly (\d+) step")
SHA = re.compile(r"^[0-9a-f]{40}$", re.M)


def git(where: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """git in `where`, read without optional locks; InfraError if git cannot run, or (with
    `check`) if it fails."""
    argv = ["git", "--no-optional-locks", "-C", str(where), *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ToolMissing("git", "install the Debian package git") from None
    except subprocess.TimeoutExpired:
        raise InfraError(f"git {args[0]} in {where} took over {TIMEOUT} s") from None
    if check and done.returncode != 0:
        raise InfraError(f"git {' '.join(args[:2])} in {where}: {(done.stderr or done.stdout).strip()[:300]}")
    return done


def need_git(which=shutil.which) -> None:
    """ToolMissing, before anything is made, if there is no git to bisect with."""
    if which("git") is None:
        raise ToolMissing("git", "bisect runs git's own `git bisect`: install the Debian package git")


def check_tree(tree: Path) -> Path:
    """`--tree DIR`: the top of a git work tree, resolved; a UsageError else."""
    if not Path(tree).is_dir():
        raise UsageError(f"--tree {tree}: not a directory")
    done = git(tree, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise UsageError(f"--tree {tree}: not a git work tree")
    top = Path(done.stdout.strip()).resolve()
    if top != Path(tree).resolve():  # git would take the repository it is inside, whatever that holds
        raise UsageError(f"--tree {tree}: not the top of a git work tree but a folder inside {top}: "
                         "give the kernel tree's top")
    return top


def resolve(tree: Path, rev: str, flag: str) -> str:
    """A revision of the user's tree as its full commit id; a UsageError naming `flag` if none."""
    if not rev.strip() or rev.startswith("-"):
        raise UsageError(f"{flag} {rev!r}: not a revision")
    done = git(tree, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
    if done.returncode != 0 or not SHA.match(done.stdout.strip()):
        raise UsageError(f"{flag} {rev}: no such commit in {tree}")
    return done.stdout.strip()


def is_ancestor(tree: Path, old: str, new: str) -> bool:
    done = git(tree, "merge-base", "--is-ancestor", old, new, check=False)
    if done.returncode not in (0, 1):
        raise InfraError(f"git merge-base in {tree}: {done.stderr.strip()[:300]}")
    return done.returncode == 0


def subject(where: Path, commit: str) -> str:
    return git(where, "log", "-1", "--format=%s", commit).stdout.strip()


@dataclass(frozen=True)
class Position:
    """Where git's bisect stands: the commit to test next, or the end (`first`, or the
    `candidates` only skipped commits leave)."""

    current: str | None
    left: int = 0  # git's "roughly N steps" after this one
    first: str | None = None
    candidates: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        return self.current is None


@dataclass(frozen=True)
class Clone:
    """The private clone a bisect runs in."""

    path: Path

    def ensure(self, tree: Path) -> "Clone":
        """Made once from `tree` (whole or not at all)."""
        if (self.path / ".git").is_dir():
            mark_used(self.path.parent)  # the clone's cache entry, for `plugpull kernels prune`
            return self
        partial = self.path.with_name(self.path.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        git(partial.parent, "clone", "--quiet", "--shared", "--no-checkout", "--", str(tree), str(partial))
        partial.rename(self.path)
        return self

    def checkout(self, commit: str) -> None:
        """A clean checkout of `commit`, any bisect in the clone reset."""
        git(self.path, "bisect", "reset", check=False)
        git(self.path, "checkout", "--quiet", "--force", "--detach", commit)
        git(self.path, "clean", "-dffq")

    def start(self, old_term: str, new_term: str, new: str, old: str) -> Position:
        """A fresh `git bisect start` (any earlier one in the clone reset), from a clean checkout of `new`."""
        self.checkout(new)
        return self._position(git(self.path, "bisect", "start", f"--term-old={old_term}",
                                  f"--term-new={new_term}", new, old, check=False))

    def mark(self, term: str, commit: str) -> Position:
        """`git bisect TERM COMMIT` (TERM: a term of the bisect, or skip)."""
        return self._position(git(self.path, "bisect", term, commit, check=False))

    def log(self) -> str:
        return git(self.path, "bisect", "log").stdout

    def _position(self, done: subprocess.CompletedProcess) -> Position:
        said = done.stdout + done.stderr
        if found := FIRST.search(said):
            return Position(None, first=found.group(1))
        if ONLY_SKIPPED in said:
            return Position(None, candidates=tuple(SHA.findall(said.split(ONLY_SKIPPED, 1)[1])))
        if done.returncode != 0:
            raise InfraError(f"git bisect in {self.path}: {said.strip()[:300]}")
        left = ROUGHLY.search(said)
        head = git(self.path, "rev-parse", "HEAD").stdout.strip()
        return Position(head, int(left.group(1)) if left else 0)


register(Kind("bisect", entry_lock=".lock"))  # a tree's private clone; `plugpull bisect` holds the lock
