"""A report onto a full disk: exit 3 (the input was good), one line naming the report's
directory, and nothing of the report left, neither a half directory nor its staging beside
it; an earlier report in the same place stays whole. No VM: the disk fills in a stand-in
for the writes, after the first pages are written."""

import errno
import os
from pathlib import Path

import pytest

from tests.unit.report.test_report import results  # noqa: F401 (a fixture)
from tests.unit.report.test_hunts import RENAMES, make_hunt
from tests.unit.hunt.test_findings import SETTINGS as BTRFS, both_names
from tests.cli_run import run_cli
from plugpull.generate.space import workload_of


@pytest.fixture
def full_after(monkeypatch):
    """The disk is full from the `n`th file write on."""
    real = Path.write_bytes

    def arm(n: int):
        count = [0]

        def write_bytes(self, data):
            count[0] += 1
            if count[0] >= n:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(self, data)
        monkeypatch.setattr(Path, "write_bytes", write_bytes)
    return arm


def a_hunt(tmp_path: Path) -> Path:
    return make_hunt(tmp_path / "h", BTRFS, [both_names(workload_of(t)) for t in RENAMES])


def run(argv, capsys) -> tuple[int, str]:
    code, _, err = run_cli(argv, capsys)
    return code, err


@pytest.mark.parametrize("kind", ["hunt", "matrix"])
def test_a_full_disk_leaves_no_report_and_says_where(kind, tmp_path, capsys, full_after, results):  # noqa: F811
    source = a_hunt(tmp_path) if kind == "hunt" else results
    out = tmp_path / "out" / "r"
    out.parent.mkdir()
    full_after(2)
    code, err = run(["report", source, "--out", out], capsys)
    said = [line for line in err.splitlines() if "warning: " not in line]  # the fixture's torn line is warned of
    assert code == 3 and len(said) == 1 and f"the report {out} was not written" in said[0], err
    assert "No space left on device" in err and list(out.parent.iterdir()) == []


def test_an_earlier_report_stays_whole_when_the_disk_fills(tmp_path, capsys, full_after):
    hunt = a_hunt(tmp_path)
    out = tmp_path / "r"
    assert run(["report", hunt, "--out", out], capsys)[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    full_after(3)
    assert run(["report", hunt, "--out", out], capsys)[0] == 3
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h", "r"]


def test_a_report_failing_half_way_into_an_earlier_one_leaves_it_whole(tmp_path, capsys, monkeypatch):
    """The new report's entries are moved into the earlier one's directory one by one: the
    second move fails, and the first (its workloads/, say) must not stay in, since the
    message says nothing of the report is left."""
    hunt = a_hunt(tmp_path)
    out = tmp_path / "r"
    assert run(["report", hunt, "--out", out], capsys)[0] == 0
    before = {p.relative_to(out): p.read_bytes() if p.is_file() else None for p in out.rglob("*")}
    journal = (hunt / "hunt.jsonl").read_text().splitlines(keepends=True)
    (hunt / "hunt.jsonl").write_text("".join(journal[1:]))  # the new report has a workload less
    moves = []
    real_rename, real_replace = os.rename, os.replace

    def failing(real):
        def move(src, dst, *args, **kwargs):
            if Path(src).parent.name.startswith(".r.") and Path(dst).parent == out:
                moves.append(src)
                if len(moves) == 2:
                    raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))
            return real(src, dst, *args, **kwargs)
        return move
    monkeypatch.setattr(os, "rename", failing(real_rename))
    monkeypatch.setattr(os, "replace", failing(real_replace))
    code, err = run(["report", hunt, "--out", out], capsys)
    assert code == 3 and "nothing of it is left" in err and len(moves) == 2, err
    assert {p.relative_to(out): p.read_bytes() if p.is_file() else None for p in out.rglob("*")} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h", "r"]
