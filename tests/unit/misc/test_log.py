"""Logging: the default console shows the step lines as they always were, -v and -vv add
detail, and a run's log file holds the debug lines of that run only."""

import argparse
import logging

import pytest

import plugpull.log
from plugpull.cli import parser
from plugpull.errors import GuestTimeout
from plugpull.guest.contract.channel import GuestResult
from plugpull.guest.contract.config import Accel, MachineSpec
from plugpull.guest.qemu.machine import Machine
from plugpull.log import add_log_options, run_log, setup_logging

log = logging.getLogger("plugpull.crash.example")


@pytest.fixture(autouse=True)
def fresh_plugpull_logger(monkeypatch):
    """No handler from an earlier test (a test of the CLI sets logging up); the level back after."""
    logger = logging.getLogger("plugpull")
    level = logger.level
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(plugpull.log, "_installed", [])
    yield
    for handler in logger.handlers:
        handler.close()
    logger.setLevel(level)


def options(*argv):
    p = argparse.ArgumentParser()
    add_log_options(p)
    return p.parse_args(list(argv))


def test_default_console_prints_info_lines_as_plain_text_and_no_debug(capsys):
    setup_logging(options())
    log.info("recording fsync-files on xfs ...")
    log.debug("a detail")
    assert capsys.readouterr().err == "recording fsync-files on xfs ...\n"


def test_one_v_adds_level_and_source_two_add_debug(capsys):
    setup_logging(options("-v"))
    log.info("step")
    log.debug("detail")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].endswith(" INFO    plugpull.crash.example: step")
    setup_logging(options("-vv"))
    log.debug("detail")
    assert capsys.readouterr().err.endswith(" DEBUG   plugpull.crash.example: detail\n")


def test_setup_twice_prints_each_line_once(capsys):
    setup_logging(options())
    setup_logging(options())
    log.info("once")
    assert capsys.readouterr().err == "once\n"


def test_log_file_gets_debug_lines_whatever_the_console_shows(tmp_path, capsys):
    setup_logging(options("--log-file", str(tmp_path / "sub" / "all.log")))
    log.debug("guest booted")
    assert capsys.readouterr().err == ""
    assert "DEBUG" in (tmp_path / "sub" / "all.log").read_text()
    assert "plugpull.crash.example: guest booted" in (tmp_path / "sub" / "all.log").read_text()


def test_run_log_holds_the_runs_debug_lines_and_no_later_ones(tmp_path, capsys):
    setup_logging(options())
    with run_log(tmp_path / "results" / "run.log") as path:
        log.debug("inside")
        log.info("a step")
    log.debug("after")
    text = path.read_text()
    assert "started" in text and "inside" in text and "a step" in text and "after" not in text
    assert capsys.readouterr().err == "a step\n"
    assert logging.getLogger("plugpull").level == logging.INFO


def test_run_log_records_what_ended_the_run(tmp_path):
    with pytest.raises(RuntimeError):
        with run_log(tmp_path / "crash.log"):
            raise RuntimeError("QEMU died")
    text = (tmp_path / "crash.log").read_text()
    assert "the run ended with RuntimeError: QEMU died" in text and "Traceback" in text


def test_run_log_appends_a_resumed_run(tmp_path):
    for word in ("first", "second"):
        with run_log(tmp_path / "run.log"):
            log.debug(word)
    text = (tmp_path / "run.log").read_text()
    assert text.index("first") < text.index("second")


@pytest.mark.parametrize("argv", [["doctor"], ["shell"], ["disks"], ["crash"], ["replay", "d"], ["matrix"],
                                  ["reproduce", "c.toml"], ["report", "r.jsonl"]], ids=lambda a: a[0])
def test_every_subcommand_takes_the_log_options(argv, tmp_path):
    args = parser().parse_args([*argv, "-vv", "--log-file", str(tmp_path / "x.log")])
    assert (args.verbose, args.log_file) == (2, tmp_path / "x.log")


class FakeChannel:
    def run(self, command, timeout):
        if command.startswith("sleep"):
            raise GuestTimeout("no answer in 1 s")
        return GuestResult(command, 3, b"", b"")


def test_guest_commands_and_power_cuts_are_debug_lines(caplog):
    m = Machine(MachineSpec(), image=None, accel=Accel.TCG, name="checker")
    m._channel = FakeChannel()
    with caplog.at_level(logging.DEBUG, logger="plugpull"):
        m.run("cat > /tmp/w.sh <<'EOF'\n" + "x" * 300 + "\nEOF")
        with pytest.raises(GuestTimeout):
            m.run("sleep %s", "9")
        m.power_cut()
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in lines] == [logging.DEBUG] * 3
    assert lines[0][1].startswith("checker: rc 3 in ") and lines[0][1].endswith(": cat > /tmp/w.sh <<'EOF' ...")
    assert "failed after" in lines[1][1] and "no answer in 1 s" in lines[1][1] and lines[1][1].endswith("sleep 9")
    assert lines[2][1] == "checker: power cut"
