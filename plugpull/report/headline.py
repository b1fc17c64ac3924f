"""The report's first sentence: what each mode did, from the cells themselves.

Per row label (the mode; through a stack, the stack, the member lost and the mode, as the
tables label their rows), over every table that has it: the time it took against barrier on
the first phase (the geometric mean of the tables' `vs barrier`), and how many of its crash
states were not clean, with the verdicts that made them so. Nothing is said that the cells do
not show.
"""

import math
from collections import Counter

from plugpull.report.cause import fmt_ratio
from plugpull.report.rates import BASELINE, mode_rank
from plugpull.report.tables import groups, row_of, slowdown, stack_of
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
    if ratio is not None and mode != BASELINE:  # a stack's barrier row: what the stack costs
        parts.append(f"took {fmt_ratio(ratio)} barrier's time")
    if checked:
        which = ", ".join(f"{n} {v}" for v, n in verdicts.most_common())
        parts.append(f"left {unsafe} of {checked} crash states unsafe" + (f" ({which})" if which else ""))
    return f"{mode} " + " and ".join(parts) if parts else None


def rank(cell: CellResult) -> tuple:
    """Plain rows first, then per stack (and member lost), each in mode order."""
    return stack_of(cell), row_of(cell).removesuffix(cell.mode), mode_rank(cell.mode)


def headline(cells: list[CellResult]) -> str:
    """One sentence over the modes in the cells, or "" when no cell measured anything."""
    by_row: dict[str, list[CellResult]] = {}
    ratios: dict[str, list[float]] = {}
    tables, kernels = 0, set()
    for group in groups(cells):
        if any(not cell.error for cell in group.cells):
            tables, kernels = tables + 1, kernels | {group.kernel}
        for cell in group.cells:
            if cell.error:
                continue
            by_row.setdefault(row_of(cell), []).append(cell)
            if (ratio := slowdown(cell, group)) is not None:
                ratios.setdefault(row_of(cell), []).append(ratio)
    order = sorted(by_row, key=lambda row: rank(by_row[row][0]))
    clauses = [c for row in order if (c := mode_clause(row, by_row[row], ratios.get(row, [])))]
    if not clauses:
        return ""
    where = "In the one table below" if tables == 1 else f"Over the {tables} tables below"
    if len(kernels) > 1:
        where += f" ({len(kernels)} kernels)"
    return f"{where}, " + "; ".join(clauses) + "."
