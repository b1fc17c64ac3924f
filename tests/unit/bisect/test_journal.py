"""A bisect's directory (`bisect/journal`, a `plugpull.rundir`): its steps read back whole,
lines no reader can use left out, counted and set aside; another bisect's directory refused."""

import json
import re

import pytest

from plugpull.bisect.journal import REJECTED, SETTINGS, STEPS, BisectStep, Journal, check_out
from plugpull.errors import UsageError

SETTINGS_DOC = {"tree": "/t", "good": "a" * 40, "bad": "b" * 40, "runs": 3}
STEP = BisectStep("c" * 40, "fix a thing", "bad", "FAIL at run 1 of 3")
UNUSABLE = {
    "nested brackets": "[" * 10_000 + "]" * 10_000,
    "torn": '{"commit": "cc',
    "a number for the commit": json.dumps({"commit": 7, "subject": "s", "mark": "bad", "detail": ""}),
    "a field missing": json.dumps({"commit": "c" * 40, "subject": "s", "mark": "bad"}),
    "a NUL in the commit": json.dumps({"commit": "c\0c", "subject": "s", "mark": "bad", "detail": ""}),
    "a list for the subject": json.dumps({"commit": "c" * 40, "subject": ["s"], "mark": "bad", "detail": ""}),
}


@pytest.mark.parametrize("text", UNUSABLE.values(), ids=UNUSABLE.keys())
def test_a_step_no_reader_can_use_is_left_out_counted_and_set_aside(tmp_path, text):
    out = tmp_path / "b"
    Journal(out, SETTINGS_DOC).add(STEP)
    with open(out / STEPS, "a") as f:
        f.write(text + "\n")
    again = Journal(out, SETTINGS_DOC)
    assert again.left_out == 1 and again.steps() == [STEP]
    assert (out / REJECTED).read_text() == text + "\n"
    again.add(STEP)
    assert again.steps() == [STEP, STEP] and Journal(out, SETTINGS_DOC).left_out == 0


def test_a_step_after_a_torn_last_line_starts_a_line_of_its_own(tmp_path):
    out = tmp_path / "b"
    journal = Journal(out, SETTINGS_DOC)
    (out / STEPS).write_text('{"commit": "cc')
    journal.add(STEP)
    assert journal.steps() == [STEP]


@pytest.mark.parametrize("make, words", [
    (lambda out: (out / SETTINGS).write_text(json.dumps({**SETTINGS_DOC, "runs": 5})), "runs 5 there, 3 here"),
    (lambda out: (out / "notes.txt").write_text("x"), f"not a bisect's directory (no {SETTINGS})"),
    (lambda out: (out / SETTINGS).write_text("[1"), "unreadable (not JSON)"),
    (lambda out: (out / SETTINGS).symlink_to("/etc/hostname"), "a symbolic link, where the bisect keeps"),
])
def test_a_directory_of_another_bisect_or_of_something_else_is_refused(tmp_path, make, words):
    out = tmp_path / "b"
    out.mkdir()
    make(out)
    with pytest.raises(UsageError, match=re.escape(words)):
        check_out(out, SETTINGS_DOC)


def test_the_same_bisect_goes_on_and_a_new_name_is_fine(tmp_path):
    check_out(tmp_path / "new", SETTINGS_DOC)
    Journal(tmp_path / "b", SETTINGS_DOC)
    check_out(tmp_path / "b", SETTINGS_DOC)
