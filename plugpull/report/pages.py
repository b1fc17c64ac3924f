"""The report's state pages: one page per matrix cell that has states that are not clean,
`states/CELL.html`, a section per verdict (`#data-loss`) listing each saved state with its
evidence, and the small files it links (state.json, a minimised state's summary.txt) copied
beside it, so that the report directory stands alone. Clean states are counted, not listed.

Every link is relative to the page; the artifact paths in the commands and in the copied
files are relative to the report directory (the commands are run from there), so the
report carries no absolute path of the machine it was made on.
"""

import hashlib
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from plugpull.files import SAVED_JSON_MAX, atomic_write, read_regular_text
from plugpull.report.states import KeptState, artifacts_dir, cell_states
from plugpull.report.tables import FS_VERDICTS, groups
from plugpull.results import INFRA, CellResult

STATES_DIR = "states"
LISTED = (*FS_VERDICTS[1:], INFRA)  # the verdicts whose states are listed; clean is counted


SLUG_MAX = 120  # a page's name stays far below a file name's 255 bytes, with its suffixes


def slug(text: str) -> str:
    """A file name or anchor from a key: letters, digits, '.', '_' and '-' only; a long key
    cut, its digest kept at the end, so that two keys still make two names."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "_"
    if len(name) <= SLUG_MAX:
        return name
    return f"{name[:SLUG_MAX - 17]}-{hashlib.sha256(text.encode('utf-8', 'replace')).hexdigest()[:16]}"


@dataclass(frozen=True)
class ShownState:
    """A saved state as its page shows it: the state, and its paths from the page and the report."""

    saved: KeptState
    anchor: str
    command_dir: str  # the artifact directory, relative to the report directory
    json: str  # the copied state.json, relative to the page
    summary: str  # the copied summary.txt, relative to the page ("" without one)
    summary_head: str  # the minimised state's summary, as shown on the page
    same: tuple[str, ...] = ()  # the anchors of the other listed cuts that made the same state

    @property
    def cut(self) -> str:
        cuts = self.saved.cuts
        return " / ".join(map(str, cuts)) + " (one per disk)" if len(cuts) > 1 else str(self.saved.cut)

    @property
    def acks(self) -> str:
        s = self.saved
        text = f"{s.acks_required} owed, {s.acks_lost} lost or read back wrong"
        return text + (f", {s.acks_allowed} lost as the workload's contract allows" if s.acks_allowed else "")


@dataclass(frozen=True)
class Section:
    verdict: str
    count: int
    listed: tuple[ShownState, ...] | None  # None: counted, not listed
    note: str = ""


@dataclass(frozen=True)
class CellPage:
    """A cell's state page: where it is (relative to the report) and what it lists."""

    cell: CellResult
    title: str
    href: str
    sections: tuple[Section, ...]

    @property
    def states(self) -> int:
        return (self.cell.crash.states if self.cell.crash else None) or 0

    @property
    def models(self) -> str:
        return ", ".join(self.cell.crash.models) if self.cell.crash and self.cell.crash.models else "no model named"

    def link(self, verdict: str) -> str | None:
        """The link a count of this verdict opens, if its states are listed."""
        section = next((s for s in self.sections if s.verdict == verdict), None)
        return f"{self.href}#{verdict}" if section is not None and section.listed is not None else None


def relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


def copy_state(state: KeptState, out_dir: Path, where: Path) -> tuple[str, str]:
    """state.json (and a minimised state's summary.txt) copied to `where`, the artifact paths
    in them made relative to the report directory; their paths relative to the report."""
    doc = json.loads(read_regular_text(state.path / "state.json", most=SAVED_JSON_MAX))
    doc["artifact"] = relative(state.path, out_dir)
    if isinstance(doc.get("record"), str):
        doc["record"] = relative(state.path / doc["record"], out_dir)
    where.mkdir(parents=True, exist_ok=True)
    atomic_write(where / "state.json", (json.dumps(doc, indent=1) + "\n").encode("utf-8"))
    if not (state.minimised and state.minimised.summary):
        return relative(where / "state.json", out_dir), ""
    text = portable_summary(state.minimised.summary, state.minimised.path, out_dir)
    atomic_write(where / "summary.txt", text.encode("utf-8"))
    return relative(where / "state.json", out_dir), relative(where / "summary.txt", out_dir)


def portable_summary(text: str, minimised: Path, out_dir: Path) -> str:
    """A summary.txt whose `reproduce:` line names the artifact relative to the report."""
    lines = [f"reproduce: plugpull replay {relative(minimised, out_dir)}" if line.startswith("reproduce: ")
             else line for line in text.splitlines()]
    return "\n".join(lines) + "\n"


def shown(state: KeptState, out_dir: Path, page_dir: Path, cell_slug: str) -> ShownState:
    anchor = slug(state.name)
    json_path, summary = copy_state(state, out_dir, page_dir / cell_slug / anchor)
    from_page = relative(out_dir, page_dir)
    summary_head = portable_summary(state.minimised.summary, state.minimised.path, out_dir) if summary else ""
    return ShownState(state, anchor, relative(state.path, out_dir), f"{from_page}/{json_path}",
                      f"{from_page}/{summary}" if summary else "", summary_head)


def with_same(states) -> list[ShownState]:
    """Each state with the other cuts that made the same bytes (the same digest)."""
    states = list(states)
    by_digest: dict[str, list[str]] = {}
    for state in states:
        if state.saved.digest:
            by_digest.setdefault(state.saved.digest, []).append(state.anchor)
    return [replace(s, same=tuple(a for a in by_digest.get(s.saved.digest, ()) if a != s.anchor)) for s in states]


def sections(cell: CellResult, states: list[ShownState]) -> tuple[Section, ...]:
    """A section per verdict the cell counted; a note where the saved states do not match."""
    crash = cell.crash
    out = []
    if crash and crash.count("clean"):
        out.append(Section("clean", crash.count("clean"), None, "a clean state is not saved"))
    for verdict in LISTED:
        count = (crash.count(verdict) if crash else 0) or 0
        these = tuple(s for s in states if s.saved.verdict == verdict)
        if not count and not these:
            continue
        note = "" if count == len(these) else f"{count} counted, {len(these)} saved states found"
        out.append(Section(verdict, count, these, note))
    return tuple(out)


def cell_page(cell: CellResult, title: str, results_path: Path | None, out_dir: Path) -> CellPage:
    artifacts = artifacts_dir(cell, results_path)
    name = slug(cell.key)
    page_dir = out_dir / STATES_DIR
    states = with_same(shown(s, out_dir, page_dir, name) for s in cell_states(artifacts))
    return CellPage(cell, title, f"{STATES_DIR}/{name}.html", sections(cell, states))


def has_states(cell: CellResult) -> bool:
    """Whether some count of the cell stands for states that are listed."""
    return bool(cell.crash) and any(cell.crash.count(v) for v in LISTED)


def cell_pages(cells: list[CellResult], results_path: Path | None, out_dir: Path) -> dict[str, CellPage]:
    """The state page of each cell that counted a state that is not clean and whose artifacts
    were found, by cell key."""
    out_dir = Path(out_dir).resolve()
    pages = {}
    for group in groups(cells):
        for cell in group.cells:
            if has_states(cell) and artifacts_dir(cell, results_path) is not None:
                pages[cell.key] = cell_page(cell, f"{group.title}: {group.label(cell)}", results_path, out_dir)
    return pages


def unlisted(cells: list[CellResult], pages: dict[str, CellPage]) -> list[str]:
    """The rows whose counts link nowhere: their states were not found."""
    return [f"{group.title}: {group.label(cell)}" for group in groups(cells) for cell in group.cells
            if has_states(cell) and cell.key not in pages]
