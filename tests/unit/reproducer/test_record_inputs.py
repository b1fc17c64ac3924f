"""`reproducer STATE` reads the record its state names: a FIFO there is said, never waited on;
a record linked to /dev/zero is refused, never read to the end of memory; and no --out may
name a file of that record (the state could no longer be replayed). Exit 2, one line, nothing
written. A hang fails the test (SIGALRM). No VM."""

import os

import pytest

from tests.cli_run import files_under, refused
from tests.unit.misc.test_fifo_inputs import deadline  # noqa: F401 (a fixture)
from tests.unit.reproducer.test_forms import saved_state


@pytest.fixture
def state(tmp_path):
    return saved_state(tmp_path, list("wwfwfwfw"), [5, 8])


@pytest.mark.parametrize("name", ["record.json", "write.log.gz"])
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_record_file_that_is_a_fifo_or_a_device_is_refused(name, kind, state, tmp_path, capsys, deadline):  # noqa: F811
    path = tmp_path / "record" / name
    path.unlink()
    os.mkfifo(path) if kind == "fifo" else path.symlink_to("/dev/zero")
    before = files_under(tmp_path)
    what = "a FIFO" if kind == "fifo" else "a character device"
    refused(["reproducer", state], capsys, f"{path}: {what}, not a regular file")
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("name", ["record.json", "write.log.gz"])
def test_out_over_a_file_of_the_states_record_is_refused(name, state, tmp_path, capsys):
    path = tmp_path / "record" / name
    kept = path.read_bytes()
    refused(["reproducer", state, "--out", path], capsys, f"--out {path}", "an input of this command")
    assert path.read_bytes() == kept
    refused(["reproducer", state, "--out", state / ".." / "record" / name], capsys, "an input of this command")
    assert path.read_bytes() == kept


def test_out_beside_the_record_is_written(state, tmp_path, capsys):
    from tests.cli_run import run_cli
    code, _, err = run_cli(["reproducer", state, "--out", tmp_path / "record" / "repro.sh"], capsys)
    assert code == 0 and (tmp_path / "record" / "repro.sh").read_text().startswith("#!/bin/sh"), err
