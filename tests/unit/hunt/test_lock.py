"""A hunt's directory has one writer (hunt.lock), and reading a hunt never changes it."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from plugpull import cli
from plugpull.errors import UsageError
from plugpull.hunt.journal import JOURNAL, REJECTED, SETTINGS, Journal, set_aside, whole_line
from plugpull.hunt.lock import LOCK, hold
from plugpull.locks import WriterBusy
from plugpull.report.hunts import read_hunt
from tests.unit.hunt.test_hunt import SETTINGS_DOC, judged

ROOT = Path(__file__).resolve().parents[3]


def holder(out: Path) -> subprocess.Popen:
    """Another process holding `out`, until it is killed; started once it holds it."""
    code = textwrap.dedent(f"""
        import sys, time
        from plugpull.hunt.lock import hold
        with hold({str(out)!r}):
            print("held", flush=True)
            time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_naming_the_holder_and_a_killed_holder_blocks_nothing(tmp_path):
    out = tmp_path / "h"
    proc = holder(out)
    try:
        with pytest.raises(WriterBusy, match=rf"another hunt is writing to it \(pid {proc.pid}, since "):
            with hold(out):
                pass
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert (out / LOCK).exists()  # a killed holder leaves its file, not its lock
    with hold(out):
        assert json.loads((out / LOCK).read_text())["pid"] == os.getpid()
    assert not (out / LOCK).exists()


def test_the_holder_may_take_it_again_and_lets_go_once_at_the_outer_end(tmp_path):
    out = tmp_path / "h"
    with hold(out):
        with hold(out):
            pass
        assert (out / LOCK).exists()  # still held by the outer block
        proc = subprocess.run([sys.executable, "-c", f"from plugpull.hunt.lock import hold\nwith hold({str(out)!r}): pass"],
                              cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode != 0 and "another hunt is writing to it" in proc.stderr
    assert not (out / LOCK).exists()


def test_a_refused_holder_and_a_released_new_directory_leave_nothing(tmp_path):
    with hold(tmp_path / "a" / "b"):
        pass
    assert list(tmp_path.iterdir()) == []


def test_two_hunt_commands_on_one_out_the_second_exits_2_before_any_guest(tmp_path, monkeypatch, capsys):
    import plugpull.guest.rig as rig_mod
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(rig_mod, "prepare_rig", lambda *a: pytest.fail("a guest's image was made"))
    proc = holder(tmp_path / "h")
    try:
        before = sorted(p.name for p in (tmp_path / "h").iterdir())
        assert cli.main(["hunt", "--seq", "1", "--sample", "2", "--out", "h"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"pid {proc.pid}" in err, err
        assert sorted(p.name for p in (tmp_path / "h").iterdir()) == before
    finally:
        proc.kill()
        proc.wait()


def lines_of(out: Path) -> bytes:
    return (out / JOURNAL).read_bytes()


BAD_LINES = [b'{"id": "c", "fail', b'\xff\xfe{"id": "\x80"}', b'{"id": "d", "artifact": 12, "infra": "x"}',
             json.dumps({**judged("e"), "artifact": "../../elsewhere"}).encode(),
             json.dumps({**judged("f"), "verdicts": {"clean": "2"}}).encode()]


@pytest.mark.parametrize("bad", BAD_LINES)
def test_reading_a_hunt_leaves_every_byte_and_says_what_it_left_out(tmp_path, bad, capsys):
    out = tmp_path / "h"
    Journal(out, SETTINGS_DOC).append([judged("a")])
    with open(out / JOURNAL, "ab") as f:
        f.write(bad + b"\n" + json.dumps(judged("b")).encode() + b"\n" + b'{"id": "g", "sta')  # a live hunt's half line
    before = sorted((p.name, p.read_bytes()) for p in out.iterdir())
    hunt = read_hunt(out)
    assert sorted(line["id"] for line in hunt.lines) == ["a", "b"]
    assert "2 line(s) not whole left out" in capsys.readouterr().err
    assert sorted((p.name, p.read_bytes()) for p in out.iterdir()) == before


def test_the_holder_sets_the_lines_aside_with_their_bytes(tmp_path):
    out = tmp_path / "h"
    Journal(out, SETTINGS_DOC).append([judged("a")])
    with open(out / JOURNAL, "ab") as f:
        f.write(b"".join(bad + b"\n" for bad in BAD_LINES) + json.dumps(judged("b")).encode() + b"\n")
    assert set_aside(out) == len(BAD_LINES)
    assert (out / REJECTED).read_bytes() == b"".join(bad + b"\n" for bad in BAD_LINES)
    assert [json.loads(t)["id"] for t in lines_of(out).splitlines()] == ["a", "b"]
    assert set_aside(out) == 0


@pytest.mark.parametrize("line", [{**judged("a"), "artifact": 12}, {**judged("a"), "artifact": "/etc"},
                                  {**judged("a"), "seconds": "1"}, {**judged("a"), "kernel": 7},
                                  {**judged("a"), "rules": {"rename": True}}, {**judged("a"), "lost_kinds": "x"}])
def test_a_line_with_a_field_of_the_wrong_type_is_not_whole(line):
    assert whole_line(judged("a")) and not whole_line(line)


def test_a_fifo_journal_or_settings_is_refused_without_waiting(tmp_path):
    out = tmp_path / "h"
    out.mkdir()
    (out / SETTINGS).write_text(json.dumps(SETTINGS_DOC))
    os.mkfifo(out / JOURNAL)
    done = []
    reader = threading.Thread(target=lambda: done.append(pytest.raises(UsageError, read_hunt, out)), daemon=True)
    reader.start()
    reader.join(20)
    assert done and "not a regular file" in str(done[0].value)
    (out / JOURNAL).unlink()
    (out / JOURNAL).write_text("")
    (out / SETTINGS).unlink()
    os.mkfifo(out / SETTINGS)
    with pytest.raises(UsageError, match="hunt.json: .*not a regular file"):
        read_hunt(out)


def test_a_report_while_a_hunt_holds_its_directory_reads_it(tmp_path, capsys):
    out = tmp_path / "h"
    Journal(out, SETTINGS_DOC).append([judged("a")])
    proc = holder(out)
    try:
        assert [line["id"] for line in read_hunt(out).lines] == ["a"]
        assert time.time() and proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
