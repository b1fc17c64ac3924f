"""Kernel trouble in a guest's console or kernel log: a panic, an oops, a BUG, a hang.

    trouble = scan(console_text)      # None, or the first sign with the lines around it
    if trouble:
        print(trouble.kind, trouble.line)
        print(trouble.excerpt)

The guest kernel under test failing is a finding about the filesystem (a verdict), never a
harness failure: the checker and the recorder read their guests' consoles with this.
"""

import re
from dataclasses import dataclass
from pathlib import Path

BEFORE = 3  # lines of context before the matching line
AFTER = 30  # and after it: enough for a call trace's top
EXCERPT_CHARS = 4000

# (kind, pattern), most severe first: where one text has several signs, the first line that
# matches any of them is the one reported.
SIGNS = (
    ("panic", re.compile(r"Kernel panic - not syncing")),
    ("bug", re.compile(r"(?<![A-Za-z])BUG: |kernel BUG at ")),
    ("internal-error", re.compile(r"Internal error: ")),
    ("oops", re.compile(r"(?<![A-Za-z])Oops(?:: | - )")),
    ("general-protection-fault", re.compile(r"general protection fault")),
    ("fs-warning", re.compile(r"WARNING:.* at fs/")),
    ("hung", re.compile(r"blocked for more than \d+ seconds|(?<![A-Za-z_])hung_task(?![A-Za-z_])")),
)


@dataclass(frozen=True)
class KernelTrouble:
    kind: str  # one of SIGNS' kinds
    line: str  # the line that matched, without its timestamp
    excerpt: str  # that line with the lines around it

    @property
    def summary(self) -> str:
        return f"kernel {self.kind}: {self.line}"[:300]


def _bare(line: str) -> str:
    """A kernel log line without its `[   12.345678] ` timestamp."""
    return re.sub(r"^\s*\[\s*\d+\.\d+\]\s?", "", line).rstrip()


def scan(text: str) -> KernelTrouble | None:
    """The first sign of kernel trouble in `text` (console or dmesg output), or None."""
    lines = text.replace("\r", "").splitlines()
    for i, line in enumerate(lines):
        for kind, pattern in SIGNS:
            if pattern.search(line):
                excerpt = "\n".join(lines[max(0, i - BEFORE):i + AFTER + 1])[:EXCERPT_CHARS]
                return KernelTrouble(kind, _bare(line), excerpt)
    return None


class ConsoleWatch:
    """Reads a console log file from a mark on: what the guest printed since then."""

    def __init__(self, path: Path | None):
        self.path = path
        self.mark = 0

    def _size(self) -> int:
        try:
            return self.path.stat().st_size if self.path else 0
        except OSError:
            return 0

    def set_mark(self) -> None:
        self.mark = self._size()

    def since_mark(self) -> str:
        if self.path is None:
            return ""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.mark)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def trouble(self) -> KernelTrouble | None:
        return scan(self.since_mark())
