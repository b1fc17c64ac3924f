"""Each fix in suites/reverts/ is a patch `kernels build --revert` reads: a unified diff of the
files it names, each hunk adding the fix's lines (taken out again by `patch -R`), and its header
saying which fix it is and how sure."""

from pathlib import Path

import pytest

from plugpull.kernels.build.patches import read_patch, touched_files

ROOT = Path(__file__).resolve().parents[3]
REVERTS = sorted((ROOT / "suites" / "reverts").glob("*.patch"))


def test_there_are_reverts():
    assert REVERTS


@pytest.mark.parametrize("patch", REVERTS, ids=lambda p: p.name)
def test_a_revert_names_its_fix_and_adds_lines(patch):
    text = read_patch(patch, "--revert").decode()
    header = text.split("\n--- ", 1)[0]
    assert "How sure" in header and "--revert" in header
    assert touched_files(text.encode()) and all(f.startswith("fs/") for f in touched_files(text.encode()))
    body = text.split("\n@@", 1)[1]
    assert any(line.startswith("+") for line in body.splitlines())


def test_the_check_refuses_a_patch_without_a_header(tmp_path):
    bare = tmp_path / "bare.patch"
    bare.write_text("--- a/fs/x.c\n+++ b/fs/x.c\n@@ -1,1 +1,2 @@\n a\n+b\n")
    with pytest.raises(AssertionError):
        test_a_revert_names_its_fix_and_adds_lines(bare)
