"""The report's first sentence: what each mode did, from the cells themselves.

Per mode, over every table that has the mode (cells run through a stack are left out: they
answer another question): the time it took against barrier on the first phase (the geometric
mean of the tables' `vs barrier`), and how many of its crash states were not clean, with the
verdicts that made them so. Nothing is said that the cells do not show.
"""

import math
from collections import Counter

from plugpull.report.cause import fmt_ratio
from plugpull.report.rates import BASELINE, mode_rank
from plugpull.report.tables import groups, slowdown, stack_of
from plugpull.results import UNSAFE_VERDICTS, CellResult


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def _states(cells: list[CellResult]) -> tuple[int, int, Counter]:
    """Checked states (infra-errors left out), the unsafe ones, and the unsafe verdicts' counts."""
    checked, verdicts = 0, Counter()
    for cell in cells:
        crash = cell.crash
        if crash is None or crash.unsafe is None or crash.states is None:
            continue
        checked += crash.states - (crash.infra_error or 0)
        verdicts.update({v: crash.count(v) for v in UNSAFE_VERDICTS if crash.count(v)})
    return checked, sum(verdicts.values()), verdicts


def mode_clause(mode: str, cells: list[CellResult], ratios: list[float]) -> str | None:
    """"nobarrier took x0.54 barrier's time and left 30 of 32 crash states unsafe (30 data-loss)"."""
    checked, unsafe, verdicts = _states(cells)
    ratio = _geomean(ratios)
    parts = []
    if ratio is not None and mode != BASELINE:
        parts.append(f"took {fmt_ratio(ratio)} barrier's time")
    if checked:
        which = ", ".join(f"{n} {v}" for v, n in verdicts.most_common())
        parts.append(f"left {unsafe} of {checked} crash states unsafe" + (f" ({which})" if which else ""))
    return f"{mode} " + " and ".join(parts) if parts else None


def headline(cells: list[CellResult]) -> str:
    """One sentence over the modes in the cells, or "" when no cell measured anything."""
    by_mode: dict[str, list[CellResult]] = {}
    ratios: dict[str, list[float]] = {}
    for group in groups(cells):
        for cell in group.cells:
            if stack_of(cell) or cell.error:
                continue
            by_mode.setdefault(cell.mode, []).append(cell)
            if (ratio := slowdown(cell, group)) is not None:
                ratios.setdefault(cell.mode, []).append(ratio)
    clauses = [c for mode in sorted(by_mode, key=mode_rank)
               if (c := mode_clause(mode, by_mode[mode], ratios.get(mode, [])))]
    if not clauses:
        return ""
    tables = len({(c.fs, c.workload, c.params) for cs in by_mode.values() for c in cs})
    where = "In the one table below" if tables == 1 else f"Over the {tables} tables below"
    return f"{where}, " + "; ".join(clauses) + "."
