"""plugpull/rundir.py: the reader and writer of a run's directory and its journal of JSON lines,
each fed what it must refuse."""

import json

import pytest

from plugpull.errors import UsageError
from plugpull.rundir import SETTINGS_MAX, RunDir, a_name, append, parsed, set_aside

KIND = RunDir("test", "s.json", ("s.json", "j.jsonl"), scratch=("run.log",))


def test_a_reader_that_trips_on_a_line_leaves_that_line_out():
    data = b'{"n": 1}\n{"n": "x"}\n' + b"[" * 5000 + b"]" * 5000 + b"\n\n{"
    lines = parsed(data, lambda line: line["n"] + 1 > 0)
    assert [line for _, line in lines] == [{"n": 1}, None, None, None]
    assert [raw for raw, _ in lines][-1] == b"{"


def test_set_aside_moves_only_what_the_reader_cannot_use(tmp_path):
    (tmp_path / "j").write_bytes(b'{"n": 1}\ngarbled\n{"n": 2}\n')
    assert set_aside(tmp_path / "j", tmp_path / "r", lambda line: isinstance(line, dict)) == 1
    assert (tmp_path / "j").read_bytes() == b'{"n": 1}\n{"n": 2}\n' and (tmp_path / "r").read_bytes() == b"garbled\n"
    assert set_aside(tmp_path / "j", tmp_path / "r", lambda line: isinstance(line, dict)) == 0


def test_append_starts_after_a_torn_line_and_never_writes_through_a_link(tmp_path):
    (tmp_path / "j").write_bytes(b'{"n": 1')
    append(tmp_path / "j", [{"n": 2}])
    assert (tmp_path / "j").read_bytes() == b'{"n": 1\n{"n": 2}\n'
    (tmp_path / "other").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "other")
    with pytest.raises(OSError):
        append(tmp_path / "link", [{"n": 3}])
    assert (tmp_path / "other").read_text() == ""


def test_names_with_a_nul_or_too_long_are_not_names():
    assert a_name("seq1-000001") and a_name("x" * 255)
    assert not any(map(a_name, ["", "a\0b", "x" * 256, "é" * 128, 7, None]))


@pytest.mark.parametrize("content, words", [
    (b"{" * 3, "unreadable (not JSON)"),
    (b"[1, 2]", "not a test's settings (a JSON object)"),
    (b" " * (SETTINGS_MAX + 1), "over"),
])
def test_settings_that_are_not_a_runs_are_refused(tmp_path, content, words):
    (tmp_path / "s.json").write_bytes(content)
    with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
        KIND.check_out(tmp_path, {"a": 1})


def test_check_out_takes_a_new_name_a_begun_run_of_the_same_settings_and_a_scratch_only_dir(tmp_path):
    KIND.check_out(tmp_path / "new", {"a": 1})
    (tmp_path / "run.log").write_text("")
    KIND.check_out(tmp_path, {"a": 1})
    KIND.begin(tmp_path, {"a": 1})
    assert json.loads((tmp_path / "s.json").read_text()) == {"a": 1}
    KIND.check_out(tmp_path, {"a": 1})
    with pytest.raises(UsageError, match=r"holds a test of other settings \(a 1 there, 2 here\)"):
        KIND.check_out(tmp_path, {"a": 2})
