"""A hunt's directory: its settings (hunt.json) and a journal of finished workloads (hunt.jsonl).

A line is appended, and synced, once a workload's states are all judged, so a hunt stopped at
any moment (Ctrl-C, a lost machine) has lost at most the workloads in hand, and the same
command goes on from there. A torn last line is ignored. A workload whose line says the
harness failed on it (`infra`) is tried again. A directory that holds a hunt of other
settings, or anything but a hunt, is refused before anything runs.
"""

import json
import os
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import atomic_write_json
from plugpull.paths import WORK_PREFIX

SETTINGS, JOURNAL, LOG = "hunt.json", "hunt.jsonl", "hunt.log"


def check_out(out: Path, settings: dict | None = None) -> None:
    """UsageError unless `out` is a new name, an empty directory, or a hunt (of these settings,
    if given: before they are known, only what `out` is is checked)."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise UsageError(f"{out}: not a directory: --out takes a new name or a hunt's directory")
    if not out.exists() or all(p.name == LOG or p.name.startswith(WORK_PREFIX) for p in out.iterdir()):
        return
    if not (out / SETTINGS).is_file():
        raise UsageError(f"{out}: not a hunt's directory (no {SETTINGS}): give a new name")
    try:
        held = json.loads((out / SETTINGS).read_text())
    except (OSError, ValueError) as e:
        raise UsageError(f"{out / SETTINGS}: unreadable ({e})") from None
    if settings is None:
        return
    differ = sorted(k for k in {*held, *settings} if held.get(k) != settings.get(k))
    if differ:
        shown = ", ".join(f"{k} {held.get(k)!r} there, {settings.get(k)!r} here" for k in differ[:3])
        raise UsageError(f"{out} holds a hunt of other settings ({shown}): give a new --out")


class Journal:
    """What `out` holds of a hunt: `done`, the id -> line of every workload finished."""

    def __init__(self, out: Path, settings: dict):
        self.out = out
        self.settings = settings
        self.done: dict[str, dict] = {}
        for line in read_lines(out / JOURNAL):
            if line.get("infra"):
                self.done.pop(line["id"], None)
            else:
                self.done[line["id"]] = line

    def append(self, lines: list[dict]) -> None:
        if not lines:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        if not (self.out / SETTINGS).is_file():
            atomic_write_json(self.out / SETTINGS, self.settings)
        with open(self.out / JOURNAL, "a+b") as f:
            if f.tell() and (f.seek(f.tell() - 1), f.read(1))[1] != b"\n":
                f.write(b"\n")  # a torn line, cut by a stop while it was written, ends here
            for line in lines:
                f.write(json.dumps(line, sort_keys=True).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
        for line in lines:
            if not line.get("infra"):
                self.done[line["id"]] = line


def read_lines(path: Path) -> list[dict]:
    """The journal's lines, without a torn or foreign last one."""
    if not path.is_file():
        return []
    lines = []
    for text in path.read_text().splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("id"), str):
            lines.append(line)
    return lines
