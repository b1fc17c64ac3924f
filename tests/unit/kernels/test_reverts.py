"""Each fix in suites/reverts/ is a patch `kernels build --revert` reads: a unified diff of the
files it names, each hunk adding the fix's lines (taken out again by `patch -R`) with as many
lines as its header says, and its header naming the fix (id and subject), the command that takes
it out and how sure it is; the recall table in docs/findings.md links each one."""

import re
from pathlib import Path

import pytest

from plugpull.kernels.build.patches import read_patch, touched_files

ROOT = Path(__file__).resolve().parents[3]
REVERTS = sorted((ROOT / "suites" / "reverts").glob("*.patch"))
FIX = re.compile(r"fix ([0-9a-f]{12}) \(\"[^\"]+\"\)")
HUNK = re.compile(r"^@@ -\d+,(\d+) \+\d+,(\d+) @@")


def hunk_counts(body: str) -> list[tuple[int, int, int, int]]:
    """Each hunk's (old, new) line counts as its header says and as its lines are."""
    counts, said, old, new = [], None, 0, 0
    for line in body.splitlines():
        head = HUNK.match(line)
        if head or line.startswith("--- "):
            if said:
                counts.append((*said, old, new))
            said, old, new = (tuple(map(int, head.groups())) if head else None), 0, 0
        elif said:
            old += line[:1] in (" ", "-", "")
            new += line[:1] in (" ", "+", "")
    if said:
        counts.append((*said, old, new))
    return counts


def check_revert(patch: Path) -> None:
    text = read_patch(patch, "--revert").decode()
    header, body = text.split("\n--- ", 1)
    assert "How sure" in header and FIX.search(" ".join(header.split()))
    assert f"--revert suites/reverts/{patch.name}" in header
    assert touched_files(text.encode()) and all(f.startswith("fs/") for f in touched_files(text.encode()))
    counts = hunk_counts("--- " + body)
    assert counts and all((said_old, said_new) == (old, new) for said_old, said_new, old, new in counts)
    assert any(line.startswith("+") and not line.startswith("+++") for line in body.splitlines())


def test_there_are_reverts():
    assert REVERTS


@pytest.mark.parametrize("patch", REVERTS, ids=lambda p: p.name)
def test_a_revert_names_its_fix_and_is_well_formed(patch):
    check_revert(patch)


@pytest.mark.parametrize("patch", REVERTS, ids=lambda p: p.name)
def test_the_recall_table_links_each_revert(patch):
    assert f"(../suites/reverts/{patch.name})" in (ROOT / "docs" / "findings.md").read_text()


def test_the_check_refuses_a_patch_without_a_header(tmp_path):
    bare = tmp_path / "bare.patch"
    bare.write_text("--- a/fs/x.c\n+++ b/fs/x.c\n@@ -1,1 +1,2 @@\n a\n+b\n")
    with pytest.raises((AssertionError, ValueError)):
        check_revert(bare)


def test_the_check_refuses_a_hunk_that_miscounts(tmp_path):
    good = REVERTS[0].read_text()
    bad = tmp_path / REVERTS[0].name
    bad.write_text(re.sub(r"^(@@ -\d+,\d+ \+\d+,)(\d+)", lambda m: m[1] + str(int(m[2]) + 1), good, count=1, flags=re.M))
    check_revert(REVERTS[0])
    with pytest.raises(AssertionError):
        check_revert(bad)
