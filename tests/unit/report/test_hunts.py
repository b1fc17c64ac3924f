"""`plugpull report HUNT_DIR...`: the findings page of one or more hunts, a page per finding
and per failing workload with its saved states, links that resolve inside one directory,
and the refusals (exit 2, one line, nothing made). No VM: the hunt directories are made here
as `plugpull hunt` leaves them (hunt.json, hunt.jsonl, failing/ID/ with states/*/state.json)."""

import json
import re
from pathlib import Path

import pytest

from plugpull import cli
from plugpull.hunt.journal import JOURNAL, SETTINGS
from plugpull.report.hunts import hunt_report
from plugpull.report.links import broken_links
from tests.unit.hunt.test_findings import SETTINGS as BTRFS, both_names, link_unlink, symlink_rename
from tests.cli_run import run_cli
from plugpull.generate.space import workload_of

RENAMES = ["rename.file A/foo B/foo, fsync B", "rename.file B/bar A/bar, fsync A",
           "write.append A/bar, sync; rename.file A/foo B/foo, fsync B"]


def saved_states(hunt: Path, line: dict) -> dict:
    """`failing/ID/` as a hunt saves it: a record and a state per failing verdict."""
    where = hunt / "failing" / line["id"]
    (where / "record-0123456789abcdef").mkdir(parents=True)
    (where / "program.sh").write_text("#!/bin/sh\n# the workload's program\n")
    for verdict in line["verdicts"]:
        if verdict == "clean":
            continue
        state = where / "states" / f"prefix-cut{len(verdict)}"
        state.mkdir(parents=True)
        reason = line["reason"]
        doc = {"fs": "btrfs", "mode": "barrier", "workload": f"gen:{line['id']}", "model": "prefix", "seed": 1,
               "cut": len(verdict), "verdict": verdict, "reason": reason, "acks_required": 2, "acks_lost": 1,
               "fsck_rc": 0, "lost": [], "broken": [], "record": "../../record-0123456789abcdef",
               "digest": "ab" * 32, "evidence": {"fsck": "no error found", "mount": "", "kernel": "", "kernel_crash": ""}}
        (state / "state.json").write_text(json.dumps(doc))
    return {**line, "artifact": f"failing/{line['id']}"}


def make_hunt(path: Path, settings: dict, lines: list[dict], saved: bool = True) -> Path:
    path.mkdir(parents=True)
    (path / SETTINGS).write_text(json.dumps(settings))
    kept = [saved_states(path, line) if saved and line["failing"] else line for line in lines]
    (path / JOURNAL).write_text("".join(json.dumps(line) + "\n" for line in kept))
    return path


@pytest.fixture
def two_hunts(tmp_path) -> tuple[Path, Path]:
    renames = [both_names(workload_of(t)) for t in RENAMES]
    first = make_hunt(tmp_path / "hunt-btrfs-61", BTRFS, renames + [link_unlink(), symlink_rename()])
    second = make_hunt(tmp_path / "hunt-btrfs-73", {**BTRFS, "kernel": "7.3.4+deb13-amd64"},
                       renames[:1] + [symlink_rename()], saved=False)
    return first, second


def rows(page: str) -> list[list[str]]:
    """The findings table's rows as the texts of their cells."""
    table = page.split("<h2>Findings</h2>")[1]
    return [[re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr id=\"finding-\d+\">(.*?)</tr>", table)]


def test_two_hunts_make_one_table_with_a_column_per_hunt(two_hunts, tmp_path):
    paths = hunt_report(list(two_hunts), tmp_path / "rep")
    page = paths["html"].read_text()
    found = rows(page)
    assert [r[1] for r in found] == ["rename X/f Y/g, fsync Y", "symlink X/f, fsync X; rename X/f X/g, fsync X",
                                     "link X/f Y/g; unlink X/f, fsync X"]
    assert [r[4:] for r in found] == [["3", "1", "4"], ["1", "1", "2"], ["1", "0", "1"]]
    assert "two names on one inode" in found[0][2] and found[0][3] == "inconsistent"
    assert "hunt-btrfs-73" in page and "7.3.4+deb13-amd64" in page


def test_every_link_resolves_inside_the_report_and_a_workload_opens_its_states(two_hunts, tmp_path):
    out = tmp_path / "rep"
    hunt_report(list(two_hunts), out)
    assert broken_links(out) == []
    finding = (out / "findings" / "1.html").read_text()
    assert finding.count('">states</a>') == 3 and finding.count("not saved") == 1  # the second hunt saved none
    [workload] = [p for p in (out / "workloads").glob("*.html") if "symlink" in p.read_text()]
    text = workload.read_text()
    assert 'id="data-loss"' in text and "plugpull replay ../hunt-btrfs-61/failing/" in text
    assert "program.sh</a>" in text and 'href="../findings/2.html"' in text
    copied = json.loads(next((out / "workloads").glob("*/prefix-cut9/state.json")).read_text())
    assert copied["record"].startswith("../hunt-btrfs-61/failing/") and not Path(copied["artifact"]).is_absolute()


def test_a_findings_page_gives_its_reproducer_and_the_report_that_names_it(two_hunts, tmp_path):
    out = tmp_path / "rep"
    hunt_report(list(two_hunts), out)
    pages = {p.name: p.read_text() for p in (out / "findings").glob("*.html")}
    [link_unlink] = [t for t in pages.values() if "link X/f Y/g; unlink X/f, fsync X" in t]
    assert "plugpull reproducer gen:seq2-056383 --fs btrfs --form flakey" in link_unlink
    assert 'href="../docs/btrfs-link-unlink-report.md"' in link_unlink
    assert (out / "docs" / "btrfs-link-unlink-report.md").read_text().startswith("# btrfs: a file hard-linked")
    [renames] = [t for t in pages.values() if "rename X/f Y/g, fsync Y" in t]
    assert "plugpull reproducer gen:seq1-000234 --fs btrfs</code>" in renames  # the smallest; not a live one
    assert 'href="../docs/' not in renames  # no report names its workloads
    assert broken_links(out) == []


def test_a_workload_the_harness_failed_on_then_judged_counts_once(two_hunts, tmp_path):
    first, _ = two_hunts
    lines = [json.loads(t) for t in (first / JOURNAL).read_text().splitlines()]
    again = [{"id": lines[0]["id"], "ops": lines[0]["ops"], "infra": "QEMU died"}, lines[0]]
    (first / JOURNAL).write_text("".join(json.dumps(line) + "\n" for line in again + lines[1:]))
    hunt_report([first], tmp_path / "rep")
    page = (tmp_path / "rep" / "findings.html").read_text()
    assert [r[4] for r in rows(page)] == ["3", "1", "1"]
    assert "</code></td><td>5</td><td class=\"bad\">5</td>" in page  # 5 workloads judged, 5 failing


def test_the_page_fits_1280_px_by_the_report_s_own_rule(two_hunts, tmp_path):
    """No cell of the findings table is kept from wrapping but the counts and numbers."""
    hunt_report(list(two_hunts), tmp_path / "rep")
    page = (tmp_path / "rep" / "findings.html").read_text()
    assert 'class="findings"' in page and "table.findings td.text" in page


def report(argv: list, capsys) -> tuple[int, str]:
    code, _, err = run_cli(["report", *argv], capsys)
    return code, err


def test_the_cli_writes_beside_the_first_hunt_and_says_where(two_hunts, capsys):
    code = cli.main(["report", *map(str, two_hunts)])
    out = two_hunts[0].with_name("hunt-btrfs-61-report")
    assert code == 0 and (out / "findings.html").is_file()
    assert f"findings  {out / 'findings.html'}" in capsys.readouterr().out


@pytest.mark.parametrize("inputs, out, words", [
    (lambda h, t: [h[0], t / "matrix.jsonl"], None, "a results file among hunt directories"),
    (lambda h, t: [h[0], t / "plain"], None, "not a hunt's directory (no hunt.json)"),
    (lambda h, t: [h[0], t / "half"], None, "nothing judged yet (no hunt.jsonl)"),
    (lambda h, t: [h[0], h[1]], lambda h, t: h[1], "the same file as RESULTS"),
    (lambda h, t: [h[0]], lambda h, t: h[0] / "report", "inside the hunt directory"),
    (lambda h, t: [h[0], h[0]], None, "given twice"),
    (lambda h, t: [t / "matrix.jsonl", t / "matrix.jsonl"], None, "one results file at a time"),
])
def test_bad_inputs_are_refused_in_one_line_and_nothing_is_made(two_hunts, tmp_path, capsys, inputs, out, words):
    (tmp_path / "matrix.jsonl").write_text("")
    (tmp_path / "plain").mkdir()
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / SETTINGS).write_text("{}")
    before = sorted(p for p in tmp_path.rglob("*"))
    argv = inputs(two_hunts, tmp_path) + (["--out", out(two_hunts, tmp_path)] if out else [])
    code, err = report(argv, capsys)
    assert code == 2 and words in err and err.count("\n") == 1, err
    assert sorted(p for p in tmp_path.rglob("*")) == before


def test_a_reference_is_for_matrix_results_not_for_hunts(two_hunts, tmp_path, capsys):
    (tmp_path / "ref.jsonl").write_text("")
    code, err = report([two_hunts[0], "--reference", tmp_path / "ref.jsonl"], capsys)
    assert code == 2 and "--reference is for a matrix results file" in err
    assert not two_hunts[0].with_name("hunt-btrfs-61-report").exists()


def test_the_clean_note_says_when_fsck_did_not_read_every_state():
    from plugpull.report.hunts import workload_sections
    line = {"verdicts": {"clean": 3}}
    assert workload_sections(line, [])[0].note == "a clean state is not saved"
    failing = workload_sections(line, [], "failing")[0].note
    assert "--fsck failing" in failing and "fsck where it read the state" in failing


def test_a_hunt_s_settings_are_read_once(two_hunts, monkeypatch):
    from plugpull.report import hunts
    reads = []
    real = hunts.read_json
    monkeypatch.setattr(hunts, "read_json", lambda path: reads.append(path) or real(path))
    monkeypatch.setattr(hunts, "read_regular", lambda path: pytest.fail(f"{path} read again"), raising=False)
    assert hunts.read_hunt(two_hunts[0]).settings and reads == [two_hunts[0] / hunts.SETTINGS]
