"""`make` for a build: every line into the build log, progress with an ETA on stderr.

The ETA counts the lines make prints (one per object compiled, linked or installed) against
the number expected: for a cold build (an empty object folder), the number estimated from the
tree's Makefiles and the .config (`estimate`); for an incremental one, the number the last
incremental build of that workspace printed. Without such a build there is nothing to
estimate from: the lines and the time are shown, and no ETA.
"""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import InfraError, ToolMissing
from plugpull.files import atomic_write_json
from plugpull.progress import Progress

ENV = {"LC_ALL": "C", "KBUILD_BUILD_USER": "plugpull", "KBUILD_BUILD_HOST": "plugpull"}
CCACHE = "ccache"


class BuildFailed(InfraError):
    """make failed: a tool or the tree's fault, never a verdict (exit code 3)."""


@dataclass(frozen=True)
class Make:
    tree: Path
    out: Path
    log: Path
    jobs: int = max(1, os.cpu_count() or 1)
    ccache: Path | None = None  # ccache's folder: every compiler call goes through it

    def argv(self, *targets: str) -> list[str]:
        compiler = [f"CC={CCACHE} gcc"] if self.ccache is not None else []
        return ["make", "-C", str(self.tree), f"O={self.out}", f"-j{self.jobs}", *compiler, *targets]

    def env(self) -> dict[str, str]:
        """make's environment; with ccache, its folder, and the cache as its base (paths under it
        are hashed relative to the compiler's folder: two trees of one shape share objects).
        ccache runs in its depend mode: a miss is one compile, where its default mode first runs
        the preprocessor too, which made a cold kernel build 1.8 times as long (docs/kernels.md).
        kbuild's `-Wp,-MMD` dependency files are what that mode keys a hit on."""
        cache = {"CCACHE_DIR": str(self.ccache), "CCACHE_BASEDIR": str(self.ccache.parents[2]),
                 "CCACHE_DEPEND": "1"} if self.ccache is not None else {}
        return {**os.environ, **ENV, **cache}

    def run(self, *targets: str, expected: int = 0, label: str = "make", basis: str = "") -> int:
        """Run make; its lines go to the log. Returns the number of lines; `BuildFailed`
        naming the log and the first error when make fails. `expected` lines (from `basis`)
        give an ETA."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        shown = Lines(label, expected, basis)
        with open(self.log, "a") as log:
            log.write(f"$ {' '.join(self.argv(*targets))}\n")
            log.flush()
            try:
                proc = subprocess.Popen(self.argv(*targets), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, errors="replace", env=self.env(),
                                        start_new_session=True)
            except FileNotFoundError:
                raise ToolMissing("make", "install the Debian package make") from None
            try:
                for line in proc.stdout:
                    log.write(line)
                    shown.advance()
            except BaseException:  # interrupted: make and every compiler it started go too
                os.killpg(proc.pid, signal.SIGTERM)
                raise
            finally:
                proc.stdout.close()
                code = proc.wait()
        shown.close()
        if code != 0:
            raise BuildFailed(f"make {' '.join(targets)} failed (exit code {code}): {first_error(self.log)}; "
                              f"the build log is {self.log}")
        return shown.done


def first_error(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines()
    for line in lines:
        if ": error:" in line or ": fatal error:" in line or line.startswith("make: ***"):
            return line.strip()[:200]
    return (lines[-1].strip()[:200] if lines else "no output")


class Lines:
    """make's lines counted: a `Progress` with an ETA when a line count is expected, else a
    plain line now and then."""

    def __init__(self, label: str, expected: int, basis: str = "", every: float = 10.0):
        self.label, self.done, self.every = label, 0, every
        self.started = self.last = time.monotonic()
        self.bar = Progress(f"{label} (eta from {expected} lines: {basis or 'a build like it'})", expected) \
            if expected > 0 else None

    def advance(self) -> None:
        self.done += 1
        if self.bar is not None:
            if self.done <= self.bar.total:
                self.bar.advance()
            return
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            print(f"{self.label}: {self.done} lines in {now - self.started:.0f} s (no earlier build like it "
                  f"to estimate an ETA from)", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def expected_lines(history: Path, kind: str) -> int:
    try:
        return int(json.loads(history.read_text()).get(kind, 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def remember_lines(history: Path, kind: str, lines: int) -> None:
    try:
        known = json.loads(history.read_text())
    except (OSError, ValueError):
        known = {}
    atomic_write_json(history, {**(known if isinstance(known, dict) else {}), kind: lines})
