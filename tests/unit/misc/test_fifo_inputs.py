"""A FIFO, a socket or a device where plugpull expects a file it reads is refused in one line
(exit 2), never opened to wait for a writer: state.json, record.json, hunt.json, a kernel
file, TLS files. Each probe has seconds to answer; a hang fails it. No VM."""

import json
import os
import signal
import socket

import pytest

from plugpull.errors import UsageError
from plugpull.files import open_regular, read_regular
from tests.unit.report.test_hunts import RENAMES, make_hunt
from tests.unit.hunt.test_findings import SETTINGS as BTRFS, both_names
from tests.cli_run import refused
from plugpull.generate.space import workload_of


class Hung(Exception):
    pass


@pytest.fixture
def deadline():
    """SIGALRM after 10 s: a read that waits for a FIFO's writer fails the test, not the run."""
    def ring(signum, frame):
        raise Hung("plugpull waited on a FIFO")
    before = signal.signal(signal.SIGALRM, ring)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


def test_the_helper_opens_a_regular_file_and_refuses_the_rest(tmp_path, deadline):
    (tmp_path / "f").write_bytes(b"data")
    assert read_regular(tmp_path / "f") == b"data"
    os.mkfifo(tmp_path / "fifo")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "sock"))
        for name, kind in (("fifo", "a FIFO"), ("sock", "a socket"), (".", "a directory")):
            with pytest.raises(UsageError, match=f"--x {tmp_path / name}: {kind}, not a regular file"):
                open_regular(tmp_path / name, "--x")
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing")
    with open_regular(tmp_path / "f") as f:  # blocking again: a read waits as reads do
        assert os.get_blocking(f.fileno())


def a_fifo_state(tmp_path):
    state = tmp_path / "s"
    state.mkdir()
    os.mkfifo(state / "state.json")
    return state


@pytest.mark.parametrize("command", ["reproducer", "replay", "minimise"])
def test_a_fifo_state_json_is_refused(command, tmp_path, capsys, deadline, monkeypatch):
    monkeypatch.chdir(tmp_path)
    state = a_fifo_state(tmp_path)
    refused([command, state], capsys, f"{state}/state.json: a FIFO, not a regular file")
    assert sorted(os.listdir(tmp_path)) == ["s"]


@pytest.fixture
def hunt(tmp_path):
    return make_hunt(tmp_path / "h", BTRFS, [both_names(workload_of(t)) for t in RENAMES])


def test_a_report_of_a_hunt_with_a_fifo_state_makes_nothing(hunt, tmp_path, capsys, deadline):
    state = next(hunt.glob("failing/*/states/*/state.json"))
    state.unlink()
    os.mkfifo(state)
    refused(["report", hunt, "--out", tmp_path / "r"], capsys, f"{state}: a FIFO")
    assert sorted(os.listdir(tmp_path)) == ["h"]


def test_a_fifo_hunt_json_is_said_as_one(hunt, tmp_path, capsys, deadline, monkeypatch):
    (hunt / "hunt.json").unlink()
    os.mkfifo(hunt / "hunt.json")
    refused(["report", hunt, "--out", tmp_path / "r"], capsys, f"{hunt}/hunt.json: a FIFO")
    monkeypatch.chdir(tmp_path)
    refused(["hunt", "--seq", "1", "--out", hunt], capsys, f"{hunt}/hunt.json: a FIFO")
    assert sorted(os.listdir(tmp_path)) == ["h"]


def test_a_fifo_kernel_file_is_refused(tmp_path, capsys, deadline, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "bz")
    (tmp_path / "m").mkdir()
    refused(["crash", "--kernel", tmp_path / "bz", "--modules", tmp_path / "m"], capsys, "--kernel", "a FIFO")


def test_tls_fifos_are_said_as_fifos_not_as_missing(tmp_path, capsys, deadline):
    os.mkfifo(tmp_path / "ca")
    for name in ("cert", "key"):
        (tmp_path / name).write_text("x\n")
    refused(["scheduler", "--tls-ca-file", tmp_path / "ca", "--tls-cert", tmp_path / "cert", "--tls-key",
             tmp_path / "key"], capsys, f"--tls-ca-file {tmp_path}/ca: a FIFO")


def test_a_record_json_fifo_is_refused(tmp_path, deadline):
    from plugpull.crash.record import Record
    os.mkfifo(tmp_path / "record.json")
    with pytest.raises(UsageError, match="record.json: a FIFO"):
        Record.load(tmp_path)
    (tmp_path / "record.json").unlink()
    (tmp_path / "record.json").write_text(json.dumps({"acks": []}))
    assert Record.load(tmp_path).acks == []


def test_a_fifo_settings_json_in_a_bisects_out_is_said_as_one(tmp_path, deadline):
    from plugpull.bisect.journal import check_out
    (tmp_path / "b").mkdir()
    os.mkfifo(tmp_path / "b" / "settings.json")
    with pytest.raises(UsageError, match="settings.json: a FIFO"):
        check_out(tmp_path / "b", {"runs": 3})
