"""A hunt journal's lines that no reader can use (nested too deep to parse, wrong types inside
lists, a NUL in a name, a name too long) are left out by every reader, counted and said once,
never an exit 3; the hunt that goes on sets them aside."""

import json

import pytest

from plugpull.hunt.journal import JOURNAL, REJECTED, Journal, whole_line
from plugpull.report.hunts import read_hunt
from tests.unit.hunt.test_hunt import SETTINGS_DOC, fake_hunt, judged

NESTED = "[" * 10_000 + "]" * 10_000


def line(**fields) -> str:
    return json.dumps({**judged("u"), **fields})


UNUSABLE = {
    "nested brackets": NESTED,
    "nested in a field": '{"id": "u", "reason": ' + NESTED + "}",
    "lost_kinds of numbers": line(lost_kinds=[1, 2]),
    "lost_names of objects": line(lost_names=[{"a": 1}]),
    "first_rules with a null": line(first_rules=[None]),
    "first_point a string": line(first_point="3"),
    "a NUL in the artifact": line(artifact="failing/a\0b"),
    "a NUL in the id": line(id="seq1-0\x0001"),
    "an id of 300 characters": line(id="x" * 300),
    "an artifact part of 300 characters": line(artifact="failing/" + "y" * 300),
}


def journal_with(tmp_path, text: str):
    out = tmp_path / "h"
    Journal(out, SETTINGS_DOC).append([judged("a")])
    with open(out / JOURNAL, "a") as f:
        f.write(text + "\n")
    return out


@pytest.mark.parametrize("text", UNUSABLE.values(), ids=UNUSABLE.keys())
def test_the_hunts_reader_leaves_the_line_out_counts_it_and_changes_nothing(tmp_path, text):
    out = journal_with(tmp_path, text)
    before = (out / JOURNAL).read_bytes()
    journal = Journal(out, SETTINGS_DOC)
    assert set(journal.done) == {("a", "6.1.0-x")} and journal.left_out == 1
    assert (out / JOURNAL).read_bytes() == before and not (out / REJECTED).exists()


@pytest.mark.parametrize("text", UNUSABLE.values(), ids=UNUSABLE.keys())
def test_a_report_leaves_the_line_out_and_says_so_once(tmp_path, text, capsys):
    out = journal_with(tmp_path, text)
    (out / "hunt.json").write_text(json.dumps(SETTINGS_DOC))
    hunt = read_hunt(out)
    assert [line["id"] for line in hunt.lines] == ["a"]
    err = capsys.readouterr().err
    assert err.count("left out") == 1 and "1 line(s)" in err


PARSED = {k: t for k, t in UNUSABLE.items() if NESTED not in t}


@pytest.mark.parametrize("text", PARSED.values(), ids=PARSED.keys())
def test_a_line_from_a_worker_that_no_reader_can_use_is_not_taken(text):
    """The cluster's coordinator takes a worker's lines by `whole_line` too."""
    assert whole_line(json.loads(text)) is False
    assert whole_line(json.loads(line())) is True  # the same line, whole


def test_a_hunt_on_a_directory_with_such_a_line_sets_it_aside_and_goes_on(tmp_path, monkeypatch):
    from plugpull.hunt.record import Failed
    kernel = Failed("kernel panic", {"kind": "panic", "line": "x", "excerpt": ""})
    first = fake_hunt(tmp_path, monkeypatch, [kernel, kernel], sample=2)
    assert len(first.lines) == 2
    with open(tmp_path / "h" / JOURNAL, "a") as f:
        f.write(NESTED + "\n" + line(lost_kinds=[1]) + "\n")
    again = fake_hunt(tmp_path, monkeypatch, [], sample=2)  # nothing left to record: no exit 3, no RecursionError
    assert [l["id"] for l in again.lines] == [l["id"] for l in first.lines]
    assert (tmp_path / "h" / REJECTED).read_text() == NESTED + "\n" + line(lost_kinds=[1]) + "\n"
    assert len((tmp_path / "h" / JOURNAL).read_text().splitlines()) == 2
