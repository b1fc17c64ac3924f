"""A hunt's directory: its settings (hunt.json) and a journal of finished workloads (hunt.jsonl).

A hunt runs on one kernel (its settings hold `kernel`, the release) or on several (`kernels`,
the releases in the order they run). A line is a workload judged on one kernel, its `kernel`
field the release; a line without one (written before lines carried it) is of the hunt's one
kernel. A line is appended, and synced, once a workload's states are all judged, so a hunt stopped at
any moment (Ctrl-C, a lost machine) has lost at most the workloads in hand, and the same
command goes on from there. A workload whose line says the harness failed on it (`infra`) is
tried again. A line that is not a whole one (torn by a stop, or garbled) is left out by
every reader; only the hunt that holds the directory (`hold`) sets such lines aside, their
bytes exactly, in hunt.rejected when it goes on, their workloads judged again, so that the
journal stays valid JSON lines; so is a line no reader can use (nested too deep to parse, a
field or a list's item of the wrong type, a name with a NUL or too long: `plugpull.rundir`). A report, or anything else that reads a hunt, never changes
it: a live hunt's half-written last line is only left out. A directory that holds a hunt of
other settings, anything but a hunt, or a symbolic link where the hunt keeps one of its own
files, is refused before anything runs.
"""

from pathlib import Path

from plugpull import rundir
from plugpull.hunt.lock import LOCK
from plugpull.rundir import RunDir, a_name

SETTINGS, JOURNAL, LOG, REJECTED = "hunt.json", "hunt.jsonl", "hunt.log", "hunt.rejected"
OWN_FILES = (SETTINGS, JOURNAL, LOG, REJECTED, LOCK, "summary.txt")
OWN_DIRS = ("failing",)
TABLE = 16  # the operation tables a new hunt takes (generate/ops.py TABLES: the first, the later operations, rmdir,
# fallocate at the end of the file and collapse and insert range, the nested directory, eviction, reflink and copy
# with the points of a name the step did not touch, unlink-open with the points of the file it holds open, again,
# the ninth table's other offsets and sizes: punch, resize, tiny, mmap, and the tenth's third name, links into
# the nested directory and the nested directory moved: third, nested-link, move-dir, the eleventh's clone
# within one file: self-clone, the twelfth's btrfs snapshots: snapshot, the thirteenth's O_TMPFILE: tmpfile, the
# fourteenth's holes, the fifteenth's fourth name: fourth, and the sixteenth's clone of a hole and quota enable:
# clone-hole, quota)
LEGACY = {"setup": "synced", "table": 1}  # what a hunt's settings from before these keys were had
JUDGED_FIELDS = {"states": int, "distinct": int, "verdicts": dict, "rules": dict, "failing": bool}
OPTIONAL_FIELDS = {"kernel": str, "ops": str, "reason": str, "artifact": (str, type(None)), "seconds": (int, float),
                   "fscked": int, "lost_kinds": list, "lost_names": list, "first_point": int, "first_rules": list}
NAMES = ("lost_kinds", "lost_names", "first_rules")  # lists of strings
HUNT_DIR = RunDir("hunt", SETTINGS, OWN_FILES, OWN_DIRS, scratch=(LOG, LOCK))


def check_out(out: Path, settings: dict | None = None, unknown: tuple[str, ...] = ()) -> None:
    """UsageError unless `out` is a new name, an empty directory, or a hunt (of these settings,
    if given: before they are known, only what `out` is is checked; the `unknown` ones, such as
    the kernel's release before the guest image is made, are left out)."""
    HUNT_DIR.check_out(out, settings, unknown, LEGACY)


def held_settings(out: Path) -> dict:
    """The settings of the hunt in `out` ({} before it began); a UsageError if they cannot be
    a hunt's (`check_out` says which)."""
    return HUNT_DIR.read_settings(out) or {}


def kernels_of(settings: dict) -> list[str]:
    """The releases a hunt runs on: its `kernels`, or its one `kernel`."""
    if isinstance(settings.get("kernels"), list):
        return [str(k) for k in settings["kernels"]]
    return [str(settings["kernel"])] if settings.get("kernel") is not None else []


def line_kernel(line: dict, settings: dict) -> str:
    """The release a journal line was judged on: its own, else the hunt's one kernel's."""
    kernels = kernels_of(settings)
    return line.get("kernel") or (kernels[0] if len(kernels) == 1 else "")


def whole_line(line) -> bool:
    """Whether a parsed journal line is one the hunt wrote: judged, or not judged (infra), every
    field a reader uses of its type, and its artifact a path inside the hunt."""
    if not isinstance(line, dict) or not a_name(line.get("id")):
        return False
    if not all(_typed(line[k], t) for k, t in OPTIONAL_FIELDS.items() if k in line):
        return False
    if not all(isinstance(name, str) for k in NAMES for name in line.get(k, ())):
        return False
    if not _inside(line.get("artifact")):
        return False
    if "infra" in line:
        return isinstance(line["infra"], str)
    return all(_typed(line.get(k), t) for k, t in JUDGED_FIELDS.items()) and \
        all(_counts(line[k]) for k in ("verdicts", "rules"))


def _typed(value, kinds) -> bool:
    """isinstance, with a bool taken for no number (JSON's true is not a count)."""
    return isinstance(value, kinds) and not (isinstance(value, bool) and kinds is not bool)


def _counts(table: dict) -> bool:
    return all(isinstance(k, str) and _typed(n, int) for k, n in table.items())


def _inside(artifact) -> bool:
    """An artifact names a directory under the hunt's own, never outside it."""
    if artifact is None:
        return True
    if not a_name(artifact) or len(artifact) > 4 * rundir.NAME_MAX:
        return False
    parts = Path(artifact).parts
    return bool(parts) and not Path(artifact).is_absolute() and ".." not in parts and all(map(a_name, parts))


class Journal:
    """What `out` holds of a hunt: `done`, the (id, kernel) -> line of every workload finished
    on each kernel; `left_out`, the lines that are not whole (none is changed by reading)."""

    def __init__(self, out: Path, settings: dict):
        self.out = out
        self.settings = settings
        self.done: dict[tuple[str, str], dict] = {}
        lines = _parsed(out / JOURNAL)
        self.left_out = sum(line is None for _, line in lines)
        for _, line in lines:
            if line is not None:
                self._note(line)

    def key(self, line: dict) -> tuple[str, str]:
        return line["id"], line_kernel(line, self.settings)

    def _note(self, line: dict) -> None:
        if line.get("infra"):
            self.done.pop(self.key(line), None)
        else:
            self.done[self.key(line)] = line

    def begin(self) -> None:
        """`out` made a hunt's directory: its settings written, if they are not there yet."""
        HUNT_DIR.begin(self.out, self.settings)

    def append(self, lines: list[dict]) -> None:
        if not lines:
            return
        self.begin()
        rundir.append(self.out / JOURNAL, lines)
        for line in lines:
            if not line.get("infra"):
                self.done[self.key(line)] = line


def read_lines(path: Path) -> list[dict]:
    """The journal's whole lines: a torn or garbled one is left out."""
    return [line for _, line in _parsed(path) if line is not None]


def _parsed(path: Path) -> list[tuple[bytes, dict | None]]:
    """Each line's bytes, and the line parsed if it is whole, else None."""
    return rundir.parsed(rundir.read_journal(path), whole_line)


def set_aside(out: Path) -> int:
    """Move the journal's lines that are not whole to hunt.rejected, their bytes as they were,
    keeping the rest; the number moved. Only the hunt that holds `out` (`hold`) calls this."""
    return rundir.set_aside(out / JOURNAL, out / REJECTED, whole_line)
