"""The report as static HTML (Jinja2, autoescaped): report.html with the tables, the crash
columns marked and each count of states that are not clean linked to its cell's state page
(pages), the plot embedded as a PNG, the environment, what the verdicts and the modes mean;
and the state pages. One directory, relative links only."""

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, PackageLoader

from plugpull.files import atomic_write
from plugpull.report.tables import (FS_VERDICTS, MISSING, RATIO_NOTE, Table, environment, failures,
                                    groups, mode_notes, tables)
from plugpull.report.cause import CAUSE_NOTE, has_cause
from plugpull.report.faultpage import fault_page
from plugpull.report.headline import headline
from plugpull.report.layout import breakable, parts
from plugpull.report.pages import CellPage, cell_pages, unlisted
from plugpull.report.faults import NOTE as FAULT_NOTE, VERDICT_NOTES as FAULT_VERDICT_NOTES, fault_tables
from plugpull.report.seeds import NOTE as SEED_NOTE, seed_tables
from plugpull.results import INFRA, UNSAFE_VERDICTS, CellResult, FaultResult

TEMPLATE = "report.html.j2"
STATES_TEMPLATE = "states.html.j2"
ALARMING = (*UNSAFE_VERDICTS, INFRA)  # crash columns whose non-zero counts are marked
VERDICT_NOTES = {
    "clean": "the journal recovery mounted it, fsck (run on every state of a matrix cell) found nothing, "
             "every operation the guest was told is durable (fsync returned) is intact",
    "data-loss": "the filesystem is consistent, but an operation the guest was told is durable "
                 "is missing or wrong",
    "inconsistent": "the files are in a state the application could never have been in (a hole "
                    "in a sequence, foreign bytes, a rename half done): an invariant broke",
    "not-writable": "the recovery mount worked, but a new file or directory could not be made in it "
                    "(generated workloads: a step after recovery)",
    "fs-corrupt": "the recovery mount worked, but fsck found damage (or unmounting failed)",
    "unmountable": "the recovery mount failed",
    "kernel-crash": "the kernel under test panicked, oopsed, hit a BUG or hung on the state: "
                    "the worst verdict",
    "infra-error": "the checker itself failed: not a verdict on the filesystem, left out of "
                   "the shares",
}


@dataclass(frozen=True)
class Shown:
    """A table cell as the page shows it: its text and its CSS classes."""

    value: str
    classes: str = ""
    href: str = ""  # the state page's section that lists the states the count stands for


def marked(table: Table, pages: Sequence[CellPage | None] = ()) -> dict:
    """The table for the template: the first crash column starts a border, and a count of a
    verdict against the filesystem (or of infra-errors) that is not zero stands out and
    links to the states it counts (`pages`: each row's cell's state page, or None)."""
    def mark(i: int, value: str, page: CellPage | None = None, header: bool = False) -> Shown:
        classes = ["crash-start"] if i == table.crash_from else []
        alarming = not header and table.header[i] in ALARMING and value not in (MISSING, "0")
        if alarming:
            classes.append("bad")
        href = page.link(table.header[i]) if alarming and page and i >= table.crash_from else None
        return Shown(breakable(value) if header else value, " ".join(classes), href or "")

    pages = list(pages) or [None] * len(table.rows)
    header = [mark(i, v, header=True) for i, v in enumerate(table.header)]
    rows = [[mark(i, v, page) for i, v in enumerate(row)] for row, page in zip(table.rows, pages)]
    return {"title": table.title,
            "parts": [{"header": [header[i] for i in part], "rows": [[row[i] for i in part] for row in rows]}
                      for part in parts(list(table.header), [list(r) for r in table.rows], table.crash_from)]}


def linked_tables(cells: list[CellResult], pages: dict[str, CellPage]) -> list[dict]:
    """The tables for the template, each row's counts linked to its cell's state page."""
    return [marked(t, [pages.get(c.key) for c in g.cells]) for t, g in zip(tables(cells), groups(cells))]


def templates() -> Environment:
    return Environment(loader=PackageLoader("plugpull.report", "templates"), autoescape=True,
                       trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def fault_notes(faults: Sequence[FaultResult]) -> list[tuple[str, str]]:
    """The fault verdicts the page's tables show, with those a crash state has too."""
    shown = dict.fromkeys(r.verdict for r in faults)
    return [(v, note) for v, note in FAULT_VERDICT_NOTES.items()] + [
        (v, VERDICT_NOTES[v]) for v in shown if v not in FAULT_VERDICT_NOTES and v in VERDICT_NOTES]


def html_page(cells: list[CellResult], png: bytes | None, warnings: Sequence[str] = (),
              faults: Sequence[FaultResult] = (), pages: dict[str, CellPage] | None = None) -> str:
    """Without cells (fault runs alone) the page has no throughput tables, plot or modes;
    without `pages` its counts link nowhere."""
    return templates().get_template(TEMPLATE).render(
        headline=headline(cells),
        faults=fault_tables(list(faults)),
        fault_note=FAULT_NOTE,
        fault_verdicts=fault_notes(faults),
        fault_count=len(faults),
        cell_count=len(cells),
        tables=linked_tables(cells, pages or {}),
        unlisted=unlisted(cells, pages or {}),
        ratio_note=RATIO_NOTE,
        cause_note=CAUSE_NOTE if has_cause(cells) else "",
        seeds=seed_tables(cells),
        seed_note=SEED_NOTE,
        failures=failures(cells),
        image=base64.b64encode(png).decode("ascii") if png else "",
        environment=environment(cells),
        verdicts=[(v, VERDICT_NOTES[v]) for v in (*FS_VERDICTS, INFRA)],
        modes=mode_notes(cells),
        warnings=list(warnings),
    )


def render_html(cells: list[CellResult], png_path: Path | None, html_path: Path, warnings: Sequence[str] = (),
                faults: Sequence[FaultResult] = (), results_path: Path | None = None) -> list[Path]:
    """report.html and the pages beside it: the cells' state pages (their artifacts are looked
    for beside `results_path`, and where the cells say they are) and the fault runs' page; the
    paths of those pages."""
    png = Path(png_path).read_bytes() if png_path else None
    out_dir = Path(html_path).parent
    pages = cell_pages(cells, results_path, out_dir)
    written = []
    for page in pages.values():
        path = out_dir / page.href
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, templates().get_template(STATES_TEMPLATE).render(page=page).encode("utf-8"))
        written.append(path)
    if (fault_html := fault_page(list(faults), templates())) is not None:
        atomic_write(out_dir / fault_html[0], fault_html[1].encode("utf-8"))
        written.append(out_dir / fault_html[0])
    atomic_write(html_path, html_page(cells, png, warnings, faults, pages).encode("utf-8"))
    return written
