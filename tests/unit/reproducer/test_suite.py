"""suites/reproducers/ is what `make reproducers` writes now, and each script there takes one
block device (anything else: exit 2, before it touches anything) and cleans up on every way
out (an EXIT trap)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from plugpull.reproducer.findings import LIVE
from plugpull.reproducer.suite import DIR, files, write

HAND_WRITTEN = {"README.md"}


def stale(where: Path) -> list[str]:
    """The suite's files under `where` that differ from what would be written, are missing,
    or should not be there."""
    made = files()
    there = {str(p.relative_to(where)) for p in where.rglob("*") if p.is_file()} - HAND_WRITTEN
    wrong = [n for n, (text, mode) in made.items()
             if not (where / n).is_file() or (where / n).read_text() != text or (where / n).stat().st_mode & 0o777 != mode]
    return sorted(wrong + list(there - made.keys()))


def test_the_suite_is_current():
    assert stale(DIR) == [], "run `make reproducers`"
    assert {f"{live.name}.sh" for live in LIVE} <= set(files())


def test_a_stale_suite_is_seen(tmp_path):
    write(tmp_path)
    assert stale(tmp_path) == []
    first = tmp_path / f"{LIVE[0].name}.sh"
    first.write_text(first.read_text().replace("PASS", "OK"))
    (tmp_path / "old.sh").write_text("")
    assert stale(tmp_path) == sorted([first.name, "old.sh"])


@pytest.mark.parametrize("live", LIVE, ids=lambda live: live.name)
def test_a_script_takes_one_block_device(live, tmp_path):
    if not shutil.which("dash"):
        pytest.skip("needs dash")
    path = DIR / f"{live.name}.sh"
    assert "trap cleanup EXIT" in path.read_text()
    for argv in ([], [str(tmp_path)], ["/dev/null"], ["/dev/null", "/dev/null"]):
        done = subprocess.run(["dash", str(path), *argv], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 2 and "usage: sh" in done.stderr and done.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_each_live_finding_names_a_report_that_is_there():
    docs = Path(__file__).resolve().parents[3] / "docs" / "findings"
    assert [live.report for live in LIVE if not (docs / live.report).is_file()] == []
