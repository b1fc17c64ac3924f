"""Reports of crafted hunts: a journal line's field of the wrong type, a NUL in an artifact's
path, an id of 300 characters is left out or shortened, never exit 3; what cannot be used is
said once; a saved artifact that is a link, or a FIFO where a summary is, never puts outside
content in the report nor holds it. A hang fails the test (SIGALRM). No VM."""

import json
import os
from pathlib import Path

import pytest

from plugpull.generate.space import workload_of
from plugpull.hunt.journal import JOURNAL
from tests.cli_run import run_cli
from tests.unit.hunt.test_findings import SETTINGS as BTRFS, both_names
from tests.unit.misc.test_fifo_inputs import deadline  # noqa: F401 (a fixture)
from tests.unit.report.test_hunts import RENAMES, make_hunt

SECRET = "outside-content-never-copied"


@pytest.fixture
def hunt(tmp_path) -> Path:
    return make_hunt(tmp_path / "h", BTRFS, [both_names(workload_of(t)) for t in RENAMES])


def rewrite(hunt: Path, change: dict) -> dict:
    """The journal's first line changed by `change`; the line as it was."""
    lines = [json.loads(line) for line in (hunt / JOURNAL).read_text().splitlines()]
    first = dict(lines[0])
    lines[0].update(change)
    (hunt / JOURNAL).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return first


def report(hunt: Path, tmp_path: Path, capsys) -> tuple[str, Path]:
    out = tmp_path / "r"
    code, _, err = run_cli(["report", hunt, "--out", out], capsys)
    assert code == 0 and (out / "findings.html").is_file(), err
    return err, out


def everything(out: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())


@pytest.mark.parametrize("field, value", [
    ("lost_kinds", [{"a": 1}]), ("lost_kinds", [["x"]]), ("lost_names", [{"a": 1}]), ("lost_names", [1, None]),
    ("first_rules", [["inconsistent"]]), ("first_rules", [{}])])
def test_a_field_of_the_wrong_type_is_left_out_and_said_once(field, value, hunt, tmp_path, capsys):
    """The journal's reader (hunt/journal.whole_line) leaves such a line out whole, said once."""
    line = rewrite(hunt, {field: value})
    err, out = report(hunt, tmp_path, capsys)
    assert err.count("not whole left out") == 1, err
    assert not any(line["id"] in p.name for p in (out / "workloads").iterdir())


def test_a_nul_in_an_artifact_path_leaves_its_page_out(hunt, tmp_path, capsys):
    line = rewrite(hunt, {"artifact": "failing/x\u0000y"})
    err, out = report(hunt, tmp_path, capsys)
    assert err.count("not whole left out") == 1, err
    assert not any(line["id"] in p.name for p in (out / "workloads").iterdir())


def test_an_id_of_300_characters_is_left_out_and_said_once(hunt, tmp_path, capsys):
    """No file may be named by it (names end at 255 bytes): the journal's reader leaves it out."""
    long_id = "seq1-" + "1" * 300
    rewrite(hunt, {"id": long_id})
    err, out = report(hunt, tmp_path, capsys)
    assert err.count("not whole left out") == 1, err
    assert not [p for p in out.rglob("*") if "1111111111" in p.name]


def test_a_torn_line_is_said_once(hunt, tmp_path, capsys):
    with open(hunt / JOURNAL, "a") as f:
        f.write('{"id": "seq1-000001", "sta')
    err, _ = report(hunt, tmp_path, capsys)
    assert err.count("not whole left out") == 1, err


def outside(tmp_path: Path) -> Path:
    where = tmp_path / "elsewhere"
    where.mkdir()
    (where / "program.sh").write_text(f"#!/bin/sh\n# {SECRET}\n")
    return where


def test_a_linked_small_file_is_not_copied(hunt, tmp_path, capsys):
    program = next(hunt.glob("failing/*/program.sh"))
    program.unlink()
    program.symlink_to(outside(tmp_path) / "program.sh")
    err, out = report(hunt, tmp_path, capsys)
    assert SECRET not in everything(out)
    assert f"{program}: a symbolic link, not followed, left out of the report" in err, err


def test_a_linked_state_or_artifact_is_not_shown(hunt, tmp_path, capsys):
    elsewhere = outside(tmp_path)
    state = next(hunt.glob("failing/*/states/*"))
    doc = json.loads((state / "state.json").read_text())
    (elsewhere / "state.json").write_text(json.dumps({**doc, "reason": SECRET}))
    linked = state.with_name("prefix-cut99")
    linked.symlink_to(elsewhere)
    err, out = report(hunt, tmp_path, capsys)
    assert SECRET not in everything(out) and f"{linked}/state.json" not in err
    assert f"{linked}: a symbolic link, not followed" in err, err
    artifact = next(hunt.glob("failing/*"))
    artifact.rename(tmp_path / "moved")
    artifact.symlink_to(tmp_path / "moved")
    err, out = report(hunt, tmp_path, capsys)
    assert f"{artifact}: a symbolic link, not followed" in err
    assert not any(artifact.name in p.name for p in (out / "workloads").rglob("*"))


def test_a_fifo_summary_is_said_unreadable_and_never_waited_on(hunt, tmp_path, capsys, deadline):  # noqa: F811
    state = next(hunt.glob("failing/*/states/*"))
    (state / "minimised").mkdir()
    doc = json.loads((state / "state.json").read_text())
    (state / "minimised" / "state.json").write_text(json.dumps({**doc, "minimised": {"culprits": []}}))
    os.mkfifo(state / "minimised" / "summary.txt")
    err, out = report(hunt, tmp_path, capsys)
    assert f"{state}/minimised/summary.txt: unreadable (a FIFO, not a regular file)" in err, err
    (state / "minimised" / "summary.txt").unlink()
    (state / "minimised" / "summary.txt").write_text("reproduce: plugpull replay x\nthe culprits\n")
    err, out = report(hunt, tmp_path, capsys)
    assert "the culprits" in everything(out) and "summary.txt" not in err
