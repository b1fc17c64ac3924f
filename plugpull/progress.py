"""A progress line on stderr: redrawn in place on a terminal, a line every few seconds otherwise."""

import sys
import time


class Progress:
    def __init__(self, label: str, total: int, stream=None, every: float = 5.0):
        self.label, self.total, self.done = label, total, 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every = every
        self.started = self.last = time.monotonic()

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.tty or now - self.last >= self.every or self.done >= self.total:
            self.last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        text = (f"{self.label} [{bar}] {self.done}/{self.total} "
                f"{rate * 60:.0f}/min, eta {eta:.0f} s")
        if self.tty:
            self.stream.write("\r" + text + ("\n" if self.done >= self.total else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
