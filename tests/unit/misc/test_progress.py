"""Progress: plain lines without escape codes where stderr is not a terminal, a rich bar
where it is, safe to advance from the checker threads."""

import gc
import io
import re
import sys
import threading

import pytest

from plugpull.progress import Progress

LINE = re.compile(r"checking states \[[#.]{24}\] (\d+)/(\d+) \d+/min, eta \d+ s")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal_env(monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR", "FORCE_COLOR", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)


def test_without_a_terminal_each_line_is_plain_text_with_done_and_total():
    out = io.StringIO()
    bar = Progress("checking states", 3, stream=out, every=0)
    for _ in range(3):
        bar.advance()
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text
    lines = text.splitlines()
    assert [LINE.fullmatch(line).groups() for line in lines] == [("1", "3"), ("2", "3"), ("3", "3")]


def test_without_a_terminal_lines_come_every_few_seconds_and_at_the_end():
    out = io.StringIO()
    bar = Progress("checking states", 50, stream=out, every=3600)
    for _ in range(50):
        bar.advance()
    assert [LINE.fullmatch(line).groups() for line in out.getvalue().splitlines()] == [("50", "50")]


def test_on_a_terminal_a_rich_bar_is_drawn_and_stopped_at_the_total(terminal_env):
    out = Terminal()
    bar = Progress("checking states", 2, stream=out)
    bar.advance(2)
    text = out.getvalue()
    assert "\x1b[" in text and "2/2" in text and "/min" in text and "checking states" in text
    assert not bar._bar.live.is_started


def test_lines_written_to_stderr_under_the_bar_appear_and_stderr_comes_back(terminal_env, monkeypatch):
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    bar = Progress("checking states", 2)
    assert sys.stderr is not err
    print("a step line", file=sys.stderr)
    bar.advance(2)
    assert sys.stderr is err and "a step line\n" in err.getvalue()


def test_a_bar_let_go_before_its_total_gives_the_terminal_back(terminal_env, monkeypatch):
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    bar = Progress("checking states", 3)
    bar.advance()
    drawn = bar._bar
    del bar
    gc.collect()
    assert not drawn.live.is_started and sys.stderr is err


def test_advance_from_threads_counts_every_step_and_keeps_lines_whole():
    out = io.StringIO()
    bar = Progress("checking states", 800, stream=out, every=0)

    def work():
        for _ in range(200):
            bar.advance()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = out.getvalue().splitlines()
    assert bar.done == 800 and len(lines) == 800
    assert [int(LINE.fullmatch(line).group(1)) for line in lines] == list(range(1, 801))
