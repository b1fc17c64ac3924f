"""A bisect's directory (`--out`): what it is, each step judged, git's log, the result.

    settings.json    the bisect: tree, good and bad commits, the test and its digest, terms, runs
    steps.jsonl      one line per step judged, appended as it is judged (a line no reader can
                     use, torn by a kill or garbled, is left out and set aside in steps.rejected)
    git-bisect.log   `git bisect log`, for `git bisect replay` in a tree of the user's
    bisect.json      the result, written at the end
    bisect.lock      held by the one bisect writing here

A directory whose settings.json names another bisect is refused; the same bisect again
goes on from its steps. The directory, its settings and its journal are read and written as a
hunt's are (`plugpull.rundir`).
"""

from dataclasses import asdict, dataclass
from pathlib import Path

from plugpull import rundir
from plugpull.files import atomic_write, atomic_write_json
from plugpull.rundir import RunDir

SETTINGS, STEPS, GIT_LOG, RESULT, LOCK = "settings.json", "steps.jsonl", "git-bisect.log", "bisect.json", "bisect.lock"
REJECTED = "steps.rejected"
BISECT_DIR = RunDir("bisect", SETTINGS, (SETTINGS, STEPS, GIT_LOG, RESULT, LOCK, REJECTED), scratch=(LOCK,))
FIELDS = ("commit", "subject", "mark", "detail")


@dataclass(frozen=True)
class BisectStep:
    """One commit judged: `mark` is the term git was told (or skip), `detail` why."""

    commit: str
    subject: str
    mark: str
    detail: str

    @classmethod
    def from_json(cls, doc: dict) -> "BisectStep":
        return cls(str(doc["commit"]), str(doc["subject"]), str(doc["mark"]), str(doc["detail"]))


def check_out(out: Path, settings: dict) -> None:
    """A UsageError if `out` holds something that is not this bisect (another one's settings,
    or files of something else); nothing is made."""
    BISECT_DIR.check_out(out, settings)


def a_step(line) -> bool:
    """A journal line a bisect wrote: each field a string, the commit a name."""
    return isinstance(line, dict) and all(isinstance(line.get(k), str) for k in FIELDS) and \
        rundir.a_name(line["commit"])


class Journal:
    """The steps of one bisect in `out`, which its caller holds (`plugpull.locks.hold`); the
    lines no reader can use are set aside as it opens, and counted (`left_out`)."""

    def __init__(self, out: Path, settings: dict):
        self.out = Path(out)
        self.settings = settings
        BISECT_DIR.begin(self.out, settings)
        self.left_out = rundir.set_aside(self.out / STEPS, self.out / REJECTED, a_step)

    def steps(self) -> list[BisectStep]:
        lines = rundir.parsed(rundir.read_journal(self.out / STEPS), a_step)
        return [BisectStep.from_json(line) for _, line in lines if line is not None]

    def add(self, step: BisectStep) -> None:
        rundir.append(self.out / STEPS, [asdict(step)])

    def save_log(self, text: str) -> None:
        atomic_write(self.out / GIT_LOG, text)

    def save_result(self, doc: dict) -> Path:
        atomic_write_json(self.out / RESULT, doc)
        return self.out / RESULT
