"""The user's patches: checked to apply, in order, before anything is built; applied to a work tree.

A patch is checked on a scratch copy of the files it touches (taken from the source tree), with
the patches before it applied first, so that a series of patches that build on each other is
checked as it will be applied. `patch -p1 --forward --fuzz=0` refuses a patch already applied
(or reversed) instead of guessing, and a hunk whose context lines differ from the tree's instead
of applying it with fuzz (GNU patch's default ignores up to two of them: a patch written for
another version could land in the wrong place); its rejects are thrown away. A patch that does
not apply is a one-line `UsageError` naming the file, the hunk and the file of the tree it failed on.

A patch given with `--revert` is applied in reverse (`patch -R`): a fix taken out again. It
must reverse-apply as it is, with no fuzz; one whose change is not in the tree is refused.
"""

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import ToolMissing, UsageError
from plugpull.files import read_input
from plugpull.paths import make_tempdir

PATCH_TIMEOUT = 300
PATCH_MAX = 256 << 20  # read whole into memory: far above a fix or a series of them
_HEADER = re.compile(r"^(?:---|\+\+\+) (\S+)")
_GIT = re.compile(r"^diff --git (a/\S+) (b/\S+)")


@dataclass(frozen=True)
class Change:
    """A patch of a build, applied as it is (`--patch`) or in reverse (`--revert`)."""

    path: Path
    reverse: bool = False

    @property
    def flag(self) -> str:
        return "--revert" if self.reverse else "--patch"

    @property
    def name(self) -> str:
        return self.path.name


def as_change(patch) -> Change:
    return patch if isinstance(patch, Change) else Change(Path(patch))


def read_patch(path: Path, flag: str = "--patch") -> bytes:
    """A patch file's bytes; missing, unreadable, not a regular file, larger than `PATCH_MAX` or
    holding no diff is a one-line `UsageError` naming `flag`."""
    data = read_input(path, flag, PATCH_MAX)
    if not touched_files(data):
        raise UsageError(f"{flag} {path}: holds no diff (no ---/+++ file headers)")
    return data


def touched_files(data: bytes) -> list[str]:
    """The tree's paths a patch names (`-p1`: the first component dropped), in order, once each."""
    found = []
    for line in data.decode(errors="replace").splitlines():
        m = _GIT.match(line)
        names = m.groups() if m else (_HEADER.match(line).group(1),) if _HEADER.match(line) else ()
        for name in names:
            name = name.split("\t")[0]
            if name != "/dev/null" and "/" in name:
                rel = name.split("/", 1)[1]
                if rel not in found and not rel.startswith("/") and ".." not in Path(rel).parts:
                    found.append(rel)
    return found


def apply_patch(tree: Path, patch, dry_run: bool = False) -> None:
    """`patch -p1 --forward` in `tree` (with `-R` for a `--revert`); a `UsageError` naming the
    hunk that did not apply."""
    change = as_change(patch)
    argv = ["patch", "-p1", *(["-R"] if change.reverse else []), "--forward", "--fuzz=0", "--batch",
            "--no-backup-if-mismatch", "-r", "-", "-d", str(tree), "-i", str(Path(change.path).absolute())]
    try:
        result = subprocess.run([*argv, *(["--dry-run"] if dry_run else [])], capture_output=True, text=True,
                                timeout=PATCH_TIMEOUT)
    except FileNotFoundError:
        raise ToolMissing("patch", "install the Debian package patch") from None
    if result.returncode != 0:
        raise UsageError(f"{change.flag} {change.path}: {why_not(result.stdout + result.stderr)}")


def why_not(output: str) -> str:
    """patch's output, said in one line: the first hunk that failed and its file."""
    current = "?"
    for line in output.splitlines():
        m = re.match(r"^(?:patching|checking) file '?([^']+?)'?$", line.strip())
        if m:
            current = m.group(1)
        m = re.match(r"^Hunk #(\d+) FAILED at (\d+)", line.strip())
        if m:
            return f"hunk #{m.group(1)} of {current} does not apply (at line {m.group(2)})"
        if "Reversed (or previously applied) patch detected" in line:
            return f"{current}: already applied (or reversed) in this tree"
        if "Unreversed patch detected" in line:
            return f"{current}: not in this tree, nothing to revert (applies forward)"
        m = re.match(r"^can't find file to patch", line.strip())
        if m:
            return f"names a file the tree does not have ({current}): a -p1 patch against this tree?"
    last = [ln for ln in output.strip().splitlines() if ln.strip()]
    return f"does not apply: {last[-1].strip() if last else 'patch failed'}"


def check_patches(tree: Path, patches: list[Path]) -> None:
    """Every patch applies to `tree`, in order; nothing in `tree` changes."""
    if not patches:
        return
    scratch = make_tempdir("patches")
    try:
        for patch in map(as_change, patches):
            for rel in touched_files(read_patch(patch.path, patch.flag)):
                if (tree / rel).is_file() and not (scratch / rel).exists():
                    (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(tree / rel, scratch / rel)
            apply_patch(scratch, patch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
