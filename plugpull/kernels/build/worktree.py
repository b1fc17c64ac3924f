"""The tree a build compiles, and what a source is (for the cache key).

A build never writes into the source it was given. Debian's unpacked source stays as it was
fetched; a user's tree (`src:DIR`) is read only. What is compiled:
- `src:DIR` without patches: DIR itself, with every object under the workspace (`make O=`);
- otherwise a work copy of the source (Debian's: hard links, a file the patches touch is
  copied first; a user's tree: copied, and brought up to date before each build), with the
  patches applied. The files the last build's patches touched are put back from the source
  (a fresh copy, so `make` sees them as changed) before the next build applies its own.
One workspace per source and mode keeps its objects between builds: a patched variant
recompiles only what its patches and config change.
"""

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import InfraError, ToolMissing, UsageError
from plugpull.files import atomic_write_json
from plugpull.kernels.build.patches import apply_patch, as_change, read_patch, touched_files

GIT_TIMEOUT = 120
SKIP = {".git"}


@dataclass(frozen=True)
class Workspace:
    """Where one source's builds happen: `out` (make's O=), `tree` (the work copy, when there is one)."""

    root: Path
    source: Path
    copied: bool      # compile a work copy (patches, or a Debian source); else the source itself
    pristine: bool    # the source never changes (Debian's): the work copy is hard links
    beside: bool = False  # the objects beside the source it compiles (SOURCE/../out); else under root

    @property
    def out(self) -> Path:
        return self.tree.parent / "out" if self.beside else self.root / "out"

    @property
    def tree(self) -> Path:
        return self.root / "src" if self.copied else self.source

    @property
    def applied(self) -> Path:
        return self.root / "applied.json"

    def prepare(self, patches: list[Path]) -> None:
        """The tree as the source is, with `patches` applied, in order."""
        self.out.mkdir(parents=True, exist_ok=True)
        if not self.copied:
            return
        touched_before = self._touched()
        if not self.tree.is_dir():
            copy_tree(self.source, self.tree, links=self.pristine)
        elif self.pristine:
            restore(self.source, self.tree, touched_before)
        else:
            sync_tree(self.source, self.tree, touched_before)
        touched = sorted({rel for p in map(as_change, patches) for rel in touched_files(read_patch(p.path, p.flag))})
        atomic_write_json(self.applied, {"touched": touched})
        for rel in touched:
            unshare(self.tree / rel)
        for patch in patches:
            apply_patch(self.tree, patch)

    def _touched(self) -> list[str]:
        try:
            return json.loads(self.applied.read_text())["touched"]
        except (OSError, ValueError, KeyError):
            return []


def copy_tree(source: Path, dest: Path, links: bool) -> None:
    """A copy of `source` (without .git) at `dest`: hard links, or a copy (reflinked where the filesystem can)."""
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    argv = ["cp", "-al" if links else "-a", *([] if links else ["--reflink=auto"]), str(source), str(partial)]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise InfraError(f"copying {source} to {dest} failed: {result.stderr.strip()[:200]}")
    shutil.rmtree(partial / ".git", ignore_errors=True)
    partial.rename(dest)


def unshare(path: Path) -> None:
    """A file of its own (not a hard link into the source), so that patching it changes only the copy."""
    if path.is_file() and os.stat(path).st_nlink > 1:
        fresh = path.with_name(path.name + ".pp-unshare")
        shutil.copyfile(path, fresh)
        os.chmod(fresh, os.stat(path).st_mode & 0o7777)
        os.replace(fresh, path)


def restore(source: Path, tree: Path, touched: list[str]) -> None:
    """Put back the files a build's patches touched: copied afresh from the source, or removed."""
    for rel in touched:
        target = tree / rel
        target.unlink(missing_ok=True)
        if (source / rel).is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, target)
            os.chmod(target, os.stat(source / rel).st_mode & 0o7777)


def sync_tree(source: Path, tree: Path, touched: list[str]) -> None:
    """Bring a work copy of a user's tree up to date (rsync: what differs in size or time is copied
    with its time, so make rebuilds what changed; what is gone is removed), then put back the
    files the last patches touched, afresh, so that make rebuilds them too."""
    argv = ["rsync", "-a", "--delete", "--exclude=/.git", f"{source}/", f"{tree}/"]
    try:
        result = subprocess.run(argv, capture_output=True, text=True)
    except FileNotFoundError:
        raise ToolMissing("rsync", "install the Debian package rsync") from None
    if result.returncode != 0:
        raise InfraError(f"rsync of {source} into {tree} failed: {result.stderr.strip()[:200]}")
    restore(source, tree, touched)


def tree_identity(path: Path) -> dict:
    """What a user's tree is, for the cache key: its git HEAD and a digest of its changes against
    it (tracked and untracked), or, outside git, a digest of every file's name, size and time."""
    try:
        head = _git(path, "rev-parse", "HEAD").strip()
    except InfraError:
        head = None
    if head is None:
        digest = hashlib.sha256()
        for folder, dirs, files in sorted(os.walk(path)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP)
            for name in sorted(files):
                st = (Path(folder) / name).lstat()
                digest.update(f"{Path(folder, name).relative_to(path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return {"tree": str(path), "files": digest.hexdigest()}
    digest = hashlib.sha256(_git(path, "diff", "HEAD", "--binary").encode(errors="surrogateescape"))
    for rel in _git(path, "ls-files", "--others", "--exclude-standard", "-z").split("\0"):
        if rel:
            digest.update(rel.encode() + b"\0" + hashlib.sha256((path / rel).read_bytes()).digest())
    return {"tree": str(path), "head": head, "dirty": digest.hexdigest()}


def _git(path: Path, *args: str) -> str:
    try:
        result = subprocess.run(["git", "--no-optional-locks", "-C", str(path), *args], capture_output=True,
                                text=True, errors="surrogateescape", timeout=GIT_TIMEOUT)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        raise InfraError(f"git in {path} failed") from None
    if result.returncode != 0:
        raise InfraError(f"git {args[0]} in {path}: {result.stderr.strip()[:200]}")
    return result.stdout


def refuse_configured(path: Path) -> None:
    """`make O=` refuses a tree configured in place: say so before anything runs."""
    found = [n for n in (".config", "include/config") if (path / n).exists()]
    if found:
        raise UsageError(f"src:{path}: configured in the tree itself ({found[0]}), which `make O=` refuses: "
                         f"run `make mrproper` there, or give a clean tree")
