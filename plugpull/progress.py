"""Progress of a long step on stderr: a bar redrawn in place on a terminal; elsewhere (pytest,
CI logs, a file) a plain line every few seconds, with no escape codes.

    bar = Progress("checking states", len(states))
    bar.advance()   # one done; from any thread
"""

import sys
import threading
import time
import weakref

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bar
from rich.text import Text


class _PerMinute(ProgressColumn):
    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed * 60:.0f}/min" if speed else "-/min")


def _bar(label: str, total: int, stream) -> tuple[Bar, int]:
    """A started rich bar on `stream`. Lines written to stderr while it is drawn (the log)
    are printed above it when `stream` is stderr."""
    bar = Bar(TextColumn(label), BarColumn(), MofNCompleteColumn(), _PerMinute(), TextColumn("eta"),
              TimeRemainingColumn(), console=Console(file=stream), redirect_stdout=False,
              redirect_stderr=stream is sys.stderr)
    task = bar.add_task(label, total=total)
    bar.start()
    return bar, task


class Progress:
    def __init__(self, label: str, total: int, stream=None, every: float = 5.0):
        self.label, self.total, self.done = label, total, 0
        self.stream = stream or sys.stderr
        self.every = every
        self.started = self.last = time.monotonic()
        self._lock = threading.Lock()
        self._bar = None
        if self.stream.isatty() and total > 0:
            self._bar, self._task = _bar(label, total, self.stream)
            # Stopped at the total, or when the caller lets go of it (an error ended the step):
            # the terminal gets its cursor back either way.
            self._stop = weakref.finalize(self, self._bar.stop)

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.advance(self._task, n)
                if self.done >= self.total:
                    self.close()
                return
            now = time.monotonic()
            if now - self.last >= self.every or self.done >= self.total:
                self.last = now
                self.stream.write(self.line(now) + "\n")
                self.stream.flush()

    def close(self) -> None:
        """Leave the bar as it is now; nothing more is drawn."""
        if self._bar is not None:
            self._stop()

    def line(self, now: float) -> str:
        """The plain progress line written where there is no terminal."""
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        return f"{self.label} [{bar}] {self.done}/{self.total} {rate * 60:.0f}/min, eta {eta:.0f} s"
