"""The seeds side by side: for each seed whose case file's cells are in the results, the
seed's published figures next to plugpull's for the same workload, phase and mode, both as
ratios to barrier, with the cause columns (plugpull.report.cause)."""

from collections.abc import Iterator
from dataclasses import dataclass

from plugpull.report.cause import CAUSE_HEADER, MISSING, cause_columns, fmt_ratio
from plugpull.report.rates import BASELINE, fmt_rate, mode_rank, rate_of, unit_of
from plugpull.results import CellResult

HEADER = ("workload", "phase", "mode", "seed", "seed vs barrier", "plugpull", "plugpull vs barrier",
          *CAUSE_HEADER)
NOTE = ("seed: the seed's published figure (seconds, or its rate); both 'vs barrier' columns are the "
        "mode's time over barrier's on that phase. Each figure's line in the seed's text is in its "
        "case file's [seed] table.")
REFERENCE_HEADER = "reference vs barrier"
REFERENCE_NOTE = ("reference vs barrier: the same ratio in the reference results (a committed run of the "
                  "case, suites/results/CASE.jsonl, at the scale its cells' params give).")


@dataclass(frozen=True)
class SeedTable:
    title: str
    rows: tuple[tuple[str, ...], ...]
    header: tuple[str, ...] = HEADER


def published_time(figure: dict) -> float | None:
    """A published figure as time per unit of work: seconds as given, a rate inverted."""
    if isinstance(figure.get("seconds"), (int, float)):
        return figure["seconds"]
    rate = figure.get("rate")
    return 1 / rate if isinstance(rate, (int, float)) and rate > 0 else None


def published_text(figure: dict) -> str:
    if "seconds" in figure:
        return f"{figure['seconds']:g} s"
    return f"{figure.get('rate', MISSING):g}" if isinstance(figure.get("rate"), (int, float)) else MISSING


def phase_ratio(cell: CellResult | None, barrier: CellResult | None, phase_name: str) -> float | None:
    """The cell's time over barrier's on the phase, from the rates (as 'vs barrier')."""
    if cell is None or barrier is None:
        return None
    mine, theirs = cell.phase(phase_name), barrier.phase(phase_name)
    if mine is None or theirs is None:
        return None
    unit = unit_of(theirs)
    base, own = rate_of(theirs, unit), rate_of(mine, unit)
    return base / own if base and own else None


def plugpull_text(cell: CellResult | None, phase_name: str) -> str:
    phase = cell.phase(phase_name) if cell else None
    unit = unit_of(phase) if phase else None
    return f"{fmt_rate(rate_of(phase, unit))} {unit}" if unit else MISSING


def seed_names(cells: list[CellResult]) -> list[str]:
    return list(dict.fromkeys(c.seed["name"] for c in cells if c.seed and isinstance(c.seed.get("name"), str)))


def _phases(figures: list[dict]) -> Iterator[tuple[str, str, dict[str, dict]]]:
    """(workload, phase, figures by mode), in the order the seed's figures first name them."""
    by_phase: dict[tuple[str, str], dict[str, dict]] = {}
    for figure in figures:
        if isinstance(figure, dict):
            by_phase.setdefault((str(figure.get("workload")), str(figure.get("phase"))), {})[
                str(figure.get("mode"))] = figure
    for (workload, phase), modes in by_phase.items():
        yield workload, phase, modes


def _rows(cells: list[CellResult], figures: list[dict],
          reference: list[CellResult] | None) -> Iterator[tuple[str, ...]]:
    for workload, phase, published in _phases(figures):
        mine = {c.mode: c for c in cells if c.workload == workload}
        barrier = mine.get(BASELINE)
        theirs = {c.mode: c for c in reference or () if c.workload == workload}
        base_time = published_time(published[BASELINE]) if BASELINE in published else None
        for mode in sorted({*published, *mine}, key=mode_rank):
            figure, cell = published.get(mode), mine.get(mode)
            own_time = published_time(figure) if figure else None
            seed_ratio = own_time / base_time if own_time and base_time else None
            causes = cause_columns(cell, barrier, phase) if cell else (MISSING,) * len(CAUSE_HEADER)
            ours = fmt_ratio(phase_ratio(cell, barrier, phase))
            then = () if reference is None else (
                fmt_ratio(phase_ratio(theirs.get(mode), theirs.get(BASELINE), phase)),)
            yield (workload, phase, mode, published_text(figure) if figure else MISSING, fmt_ratio(seed_ratio),
                   plugpull_text(cell, phase), ours, *then, *causes)


def of_seed(cells: list[CellResult], name: str) -> list[CellResult]:
    return [c for c in cells if c.seed and c.seed.get("name") == name]


def seed_tables(cells: list[CellResult], reference: list[CellResult] | None = None) -> list[SeedTable]:
    """A table per seed named in the cells' [seed] tables, from the last cell's copy of it;
    with `reference` (the cells of an earlier run), a column of its ratios beside this run's."""
    tables = []
    header = HEADER if reference is None else (*HEADER[:7], REFERENCE_HEADER, *HEADER[7:])
    for name in seed_names(cells):
        mine = of_seed(cells, name)
        figures = mine[-1].seed.get("figures")
        fs = ", ".join(dict.fromkeys(c.fs for c in mine))
        theirs = None if reference is None else of_seed(reference, name)
        rows = tuple(_rows(mine, figures if isinstance(figures, list) else [], theirs))
        tables.append(SeedTable(f"{name} side by side ({fs})", rows, header))
    return tables


def render_seeds(cells: list[CellResult], reference: list[CellResult] | None = None) -> str:
    """The seed sections as text; empty when no cell came from a case with a [seed] table."""
    out = []
    for table in seed_tables(cells, reference):
        rows = (table.header, *table.rows)
        widths = [max(len(r[i]) for r in rows) for i in range(len(table.header))]
        out.append(table.title)
        out += ["  " + "  ".join(v.ljust(w) if i < 3 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
                for r in rows]
        out.append("")
    notes = [NOTE] if reference is None else [NOTE, REFERENCE_NOTE]
    return "\n".join(out + notes + [""]) if out else ""
