"""Every candidate fix in suites/patches/ has the kernel's patch form: a `git format-patch`
mail whose subject names the subsystem it touches, signed off (or saying plainly why not), a
`Fixes:` line only in the kernel's own shape, and a diff that touches only fs/ or include/ with
hunks whose line counts add up, so that `patch -p1` reads it as written.

`git apply --check` needs the tree the patch is for, so the hunks are parsed here. No VM, no
plugpull import: plain text checks, fast."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PATCHES = sorted((ROOT / "suites" / "patches").rglob("*.patch"))  # culprits/ too

_SUBJECT = re.compile(r"^Subject: (?:\[PATCH[^\]]*\] )?([a-z0-9_.-]+(?:/[a-z0-9_.-]+)*): \S")
_FIXES = re.compile(r'^Fixes: [0-9a-f]{12,40} \("[^\n]+"\)$')
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DIFF = re.compile(r"^diff --git a/(\S+) b/(\S+)$")
_NOT_SIGNED = "Not signed off:"
_TOUCHABLE = ("fs/", "include/")


def split_mail(text: str) -> tuple[list[str], list[str], list[str]]:
    """The header lines, the message lines and the diff lines of a format-patch mail: the
    message ends at the first `---` line, the diff starts at the first `diff --git` line."""
    lines = text.splitlines()
    blank = lines.index("") if "" in lines else len(lines)
    rest = lines[blank + 1:]
    cut = rest.index("---") if "---" in rest else len(rest)
    diff_at = next((i for i, line in enumerate(rest) if line.startswith("diff --git ")), len(rest))
    return lines[:blank], rest[:cut], rest[diff_at:]


def header_problems(header: list[str]) -> tuple[list[str], str]:
    """What is wrong with the mail's header, and the subject's subsystem prefix ('' if none)."""
    problems = []
    if not header or not header[0].startswith("From "):
        problems.append("no mbox 'From <sha>' line first")
    if not any(line.startswith("From: ") for line in header):
        problems.append("no From: header")
    subject = next((line for line in header if line.startswith("Subject: ")), None)
    match = _SUBJECT.match(subject or "")
    if not match:
        problems.append(f"subject without a subsystem prefix: {subject!r}")
    return problems, match.group(1) if match else ""


def message_problems(message: list[str]) -> list[str]:
    """What is wrong with the commit message: too short to say what breaks and why, no
    Signed-off-by and no plain note why not, a Fixes: line not in the kernel's shape."""
    problems = []
    if sum(1 for line in message if line.strip()) < 5:
        problems.append("a message too short to say what breaks, how to see it and why")
    if not any(line.startswith(("Signed-off-by: ", _NOT_SIGNED)) for line in message):
        problems.append(f"neither Signed-off-by: nor a '{_NOT_SIGNED}' note")
    problems += [f"malformed Fixes: line: {line!r}" for line in message
                 if line.startswith("Fixes:") and not _FIXES.match(line)]
    return problems


def hunk_problems(lines: list[str], start: int, old: int, new: int) -> tuple[list[str], int]:
    """Count one hunk's body from `start` against the line counts its header gives; returns
    the problems and the index of the first line after the hunk, which must start another
    hunk or file, the signature, or be the end."""
    i = start
    while (old > 0 or new > 0) and i < len(lines) and lines[i][:1] in (" ", "-", "+", "\\", ""):
        kind = lines[i][:1]
        old -= kind in (" ", "-", "")
        new -= kind in (" ", "+", "")
        i += 1
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    if old < 0 or new < 0:
        return [f"hunk at diff line {start} holds more lines than its header says"], i
    if old or new:
        return [f"hunk at diff line {start} ends {old} old and {new} new lines short"], i
    if i < len(lines) and not lines[i].startswith(("@@ ", "diff --git ", "-- ")):
        return [f"hunk at diff line {start} is followed by a stray line: {lines[i]!r}"], i
    return [], i


def diff_problems(diff: list[str], prefix: str) -> list[str]:
    """What is wrong with the diff: no file, a file outside fs/ and include/, a file outside the
    subject's subsystem, `---`/`+++` lines that do not name the file, hunks that do not add up."""
    problems, files, i = [], [], 0
    while i < len(diff):
        match = _DIFF.match(diff[i])
        hunk = _HUNK.match(diff[i])
        if match:
            files.append(match.group(2))
            problems += file_header_problems(diff[i:i + 6], match.group(1), match.group(2))
        if hunk:
            old, new = (int(n) if n is not None else 1 for n in hunk.group(2, 4))
            found, i = hunk_problems(diff, i + 1, old, new)
            problems += found
            continue
        i += 1
    if not files:
        problems.append("no diff --git section")
    problems += [f"touches {name}, outside fs/ and include/" for name in files
                 if not name.startswith(_TOUCHABLE)]
    problems += [f"touches {name}, outside the subject's subsystem {prefix}" for name in files
                 if prefix and name.startswith("fs/") and not name.startswith(f"fs/{prefix}/")]
    return problems


def file_header_problems(block: list[str], old: str, new: str) -> list[str]:
    """The `---`/`+++` lines of one file's diff name it with the a/ and b/ prefixes."""
    minus = next((line for line in block if line.startswith("--- ")), None)
    plus = next((line for line in block if line.startswith("+++ ")), None)
    if minus not in (f"--- a/{old}", "--- /dev/null") or plus not in (f"+++ b/{new}", "+++ /dev/null"):
        return [f"---/+++ lines of {new} do not read a/{old} b/{new}: {minus!r} {plus!r}"]
    return []


def patch_problems(text: str) -> list[str]:
    """Everything wrong with one patch file, empty when it has the kernel's form."""
    header, message, diff = split_mail(text)
    problems, prefix = header_problems(header)
    return problems + message_problems(message) + diff_problems(diff, prefix)


def test_the_suite_holds_patches():
    assert PATCHES, "suites/patches/ is empty"
    assert all(path.suffix == ".patch" and path.is_file() for path in PATCHES), PATCHES


@pytest.mark.parametrize("path", PATCHES, ids=[path.name for path in PATCHES])
def test_patch_has_the_kernel_form(path):
    assert patch_problems(path.read_text()) == []


@pytest.mark.parametrize("path", PATCHES, ids=[path.name for path in PATCHES])
def test_patch_hunks_change_something(path):
    """A candidate fix adds or removes at least one line of code, not only context."""
    _, _, diff = split_mail(path.read_text())
    body = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert body


def _good() -> str:
    return PATCHES[0].read_text()


def _drop_first_context_line(text: str) -> str:
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if _HUNK.match(line))
    context = next(i for i in range(at + 1, len(lines)) if lines[i].startswith(" "))
    return "".join(lines[:context] + lines[context + 1:])


def _touch_outside(text: str) -> str:
    name = re.search(r"^diff --git a/(\S+) b/\S+$", text, re.M).group(1)
    return text.replace(name, "Makefile")


MALFORMED = {
    "a hunk one context line short": (_drop_first_context_line, "short"),
    "a file outside fs/ and include/": (_touch_outside, "outside fs/ and include/"),
    "a subject without a prefix": (
        lambda text: re.sub(r"^(Subject: (?:\[PATCH[^\]]*\] )?)[a-z0-9_./-]+: ", r"\1", text,
                            count=1, flags=re.M),
        "subsystem prefix"),
    "no sign-off and no note": (
        lambda text: re.sub(rf"^(Signed-off-by: |{_NOT_SIGNED}).*\n", "", text, flags=re.M),
        "Signed-off-by"),
    "a short Fixes: sha": (
        lambda text: text.replace("\n---\n", '\nFixes: 64d6b28 ("btrfs: a subject")\n---\n', 1),
        "Fixes:"),
    "no diff": (lambda text: text[:text.index("diff --git ")], "no diff"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_a_malformed_patch_is_refused(tmp_path, name):
    spoil, expected = MALFORMED[name]
    bad = tmp_path / "bad.patch"
    bad.write_text(spoil(_good()))
    assert bad.read_text() != _good()
    problems = patch_problems(bad.read_text())
    assert any(expected in problem for problem in problems), problems


def test_a_hunk_longer_than_its_header_is_refused():
    diff = ["diff --git a/fs/x/a.c b/fs/x/a.c", "--- a/fs/x/a.c", "+++ b/fs/x/a.c",
            "@@ -1,1 +1,1 @@", "-old", "+new", "+extra"]
    assert diff_problems(diff, "x")
    assert diff_problems(diff[:-1], "x") == []
