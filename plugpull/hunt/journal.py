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
journal stays valid JSON lines. A report, or anything else that reads a hunt, never changes
it: a live hunt's half-written last line is only left out. A directory that holds a hunt of
other settings, anything but a hunt, or a symbolic link where the hunt keeps one of its own
files, is refused before anything runs.
"""

import json
import os
import stat
from pathlib import Path

from plugpull.errors import UsageError
from plugpull import files
from plugpull.files import atomic_write, atomic_write_json
from plugpull.hunt.lock import LOCK
from plugpull.paths import WORK_PREFIX

SETTINGS, JOURNAL, LOG, REJECTED = "hunt.json", "hunt.jsonl", "hunt.log", "hunt.rejected"
OWN_FILES = (SETTINGS, JOURNAL, LOG, REJECTED, LOCK, "summary.txt")
OWN_DIRS = ("failing",)
TABLE = 6  # the operation tables a new hunt takes (generate/ops.py TABLES: the first, the later operations, rmdir,
# fallocate at the end of the file and collapse and insert range, the nested directory, eviction, reflink and copy
# with the points of a name the step did not touch)
LEGACY = {"setup": "synced", "table": 1}  # what a hunt's settings from before these keys were had
JUDGED_FIELDS = {"states": int, "distinct": int, "verdicts": dict, "rules": dict, "failing": bool}
OPTIONAL_FIELDS = {"kernel": str, "ops": str, "reason": str, "artifact": (str, type(None)), "seconds": (int, float),
                   "fscked": int, "lost_kinds": list, "lost_names": list}


def check_out(out: Path, settings: dict | None = None, unknown: tuple[str, ...] = ()) -> None:
    """UsageError unless `out` is a new name, an empty directory, or a hunt (of these settings,
    if given: before they are known, only what `out` is is checked; the `unknown` ones, such as
    the kernel's release before the guest image is made, are left out)."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise UsageError(f"{out}: not a directory: --out takes a new name or a hunt's directory")
    _refuse_foreign_kinds(out)
    if not out.exists() or all(p.name in (LOG, LOCK) or p.name.startswith(WORK_PREFIX) for p in out.iterdir()):
        return
    if not (out / SETTINGS).is_file():
        raise UsageError(f"{out}: not a hunt's directory (no {SETTINGS}): give a new name")
    try:
        held = json.loads((out / SETTINGS).read_text())
    except (OSError, ValueError) as e:
        raise UsageError(f"{out / SETTINGS}: unreadable ({e})") from None
    if not isinstance(held, dict):
        raise UsageError(f"{out / SETTINGS}: not a hunt's settings (a JSON object): give a new --out")
    if settings is None:
        return
    held, settings = {**LEGACY, **held}, {**LEGACY, **settings}
    differ = sorted(k for k in {*held, *settings} if held.get(k) != settings.get(k) and k not in unknown)
    if differ:
        shown = ", ".join(f"{k} {held.get(k)!r} there, {settings.get(k)!r} here" for k in differ[:3])
        raise UsageError(f"{out} holds a hunt of other settings ({shown}): give a new --out")


def _refuse_foreign_kinds(out: Path) -> None:
    """A link, or a file of another kind, where the hunt keeps its own files would make it
    write outside `out` (or into a FIFO): refused."""
    for name in (*OWN_FILES, *OWN_DIRS):
        try:
            mode = os.lstat(out / name).st_mode
        except OSError:
            continue
        wanted = stat.S_ISDIR if name in OWN_DIRS else stat.S_ISREG
        if not wanted(mode):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular " + ("directory" if name in OWN_DIRS else "file")
            raise UsageError(f"{out / name}: {kind}, where the hunt keeps its own {name}: give a new --out")


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
    if not isinstance(line, dict) or not isinstance(line.get("id"), str):
        return False
    if not all(_typed(line[k], t) for k, t in OPTIONAL_FIELDS.items() if k in line):
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
    parts = Path(artifact).parts
    return bool(parts) and not Path(artifact).is_absolute() and ".." not in parts


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
        self.out.mkdir(parents=True, exist_ok=True)
        if not (self.out / SETTINGS).is_file():
            atomic_write_json(self.out / SETTINGS, self.settings)

    def append(self, lines: list[dict]) -> None:
        if not lines:
            return
        self.begin()
        fd = os.open(self.out / JOURNAL, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        with open(fd, "a+b") as f:
            if f.tell() and (f.seek(f.tell() - 1), f.read(1))[1] != b"\n":
                f.write(b"\n")  # a torn line, cut by a stop while it was written, ends here
            for line in lines:
                f.write(json.dumps(line, sort_keys=True).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
        for line in lines:
            if not line.get("infra"):
                self.done[self.key(line)] = line


def read_lines(path: Path) -> list[dict]:
    """The journal's whole lines: a torn or garbled one is left out."""
    return [line for _, line in _parsed(path) if line is not None]


def read_regular(path: Path) -> bytes | None:
    """The bytes of the file at `path` (`files.read_regular`: a FIFO is said, not waited on),
    None if there is none."""
    try:
        return files.read_regular(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None


def _parsed(path: Path) -> list[tuple[bytes, dict | None]]:
    """Each line's bytes, and the line parsed if it is whole, else None."""
    return _lines_of(read_regular(path))


def _lines_of(data: bytes | None) -> list[tuple[bytes, dict | None]]:
    if not data:
        return []
    lines = []
    raws = data.split(b"\n")
    if not raws[-1]:
        raws.pop()
    for raw in raws:
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        if raw.strip():
            lines.append((raw, line if whole_line(line) else None))
    return lines


def set_aside(out: Path) -> int:
    """Move the journal's lines that are not whole to hunt.rejected, their bytes as they were,
    keeping the rest; the number moved. Only the hunt that holds `out` (`hold`) calls this."""
    path = out / JOURNAL
    data = read_regular(path)
    if not data:
        return 0
    lines = _lines_of(data)
    bad = [raw for raw, line in lines if line is None]
    if not bad and data == b"".join(raw + b"\n" for raw, _ in lines):
        return 0
    fd = os.open(out / REJECTED, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    with open(fd, "ab") as f:
        f.write(b"".join(raw + b"\n" for raw in bad))
        f.flush()
        os.fsync(f.fileno())
    atomic_write(path, b"".join(raw + b"\n" for raw, line in lines if line is not None))
    return len(bad)
