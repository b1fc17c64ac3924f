"""A bisect's directory (`--out`): what it is, each step judged, git's log, the result.

    settings.json    the bisect: tree, good and bad commits, the test and its digest, terms, runs
    steps.jsonl      one line per step judged, appended as it is judged (a torn last line is dropped)
    git-bisect.log   `git bisect log`, for `git bisect replay` in a tree of the user's
    bisect.json      the result, written at the end
    bisect.lock      held by the one bisect writing here

A directory whose settings.json names another bisect is refused; the same bisect again
goes on from its steps.
"""

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import SAVED_JSON_MAX, atomic_write, atomic_write_json, read_regular_text

SETTINGS, STEPS, GIT_LOG, RESULT, LOCK = "settings.json", "steps.jsonl", "git-bisect.log", "bisect.json", "bisect.lock"


@dataclass(frozen=True)
class Step:
    """One commit judged: `mark` is the term git was told (or skip), `detail` why."""

    commit: str
    subject: str
    mark: str
    detail: str

    @classmethod
    def from_json(cls, doc: dict) -> "Step":
        return cls(str(doc["commit"]), str(doc["subject"]), str(doc["mark"]), str(doc["detail"]))


def check_out(out: Path, settings: dict) -> None:
    """A UsageError if `out` holds something that is not this bisect (another one's settings,
    or files of something else); nothing is made."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: not a directory")
    if not out.is_dir() or not any(out.iterdir()):
        return
    try:
        there = json.loads(read_regular_text(out / SETTINGS, most=SAVED_JSON_MAX))  # a FIFO: said, not waited on
    except (OSError, ValueError):
        raise UsageError(f"--out {out}: holds files that are not a bisect's: give another --out") from None
    if there != settings:
        differs = sorted(k for k in set(there) | set(settings) if there.get(k) != settings.get(k))
        raise UsageError(f"--out {out}: holds another bisect (its {', '.join(differs)} differ): give another --out")


class Journal:
    """The steps of one bisect in `out`, which its caller holds (hunt.lock's `hold`)."""

    def __init__(self, out: Path, settings: dict):
        self.out = Path(out)
        self.settings = settings
        if not (self.out / SETTINGS).is_file():
            atomic_write_json(self.out / SETTINGS, settings)

    def steps(self) -> list[Step]:
        try:
            text = read_regular_text(self.out / STEPS, most=SAVED_JSON_MAX)
        except FileNotFoundError:
            return []
        found = []
        for line in text.splitlines():
            try:
                found.append(Step.from_json(json.loads(line)))
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a kill: that step is judged again
        return found

    def add(self, step: Step) -> None:
        line = json.dumps(asdict(step)) + "\n"
        fd = os.open(self.out / STEPS, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            os.write(fd, (("\n" if torn else "") + line).encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def save_log(self, text: str) -> None:
        atomic_write(self.out / GIT_LOG, text)

    def save_result(self, doc: dict) -> Path:
        atomic_write_json(self.out / RESULT, doc)
        return self.out / RESULT
