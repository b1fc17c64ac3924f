"""The report's fault tables, shaped like the crash tables: a table per workload (and its
parameters), a row per filesystem and fault, a column per verdict. Beside each verdict's count
stands what the application was told in those runs: the errnos at write, fsync and close."""

import re
from collections import Counter
from dataclasses import dataclass

from plugpull.results import INFRA, FaultResult, param_text
from plugpull.results.faults import ERRNO_SYSCALLS, FAULT_VERDICTS, UNSAFE_FAULT_VERDICTS

ALWAYS_SHOWN = ("clean", "error-reported", "silent-loss", "fs-shutdown")
PAGE = "faults.html"  # the runs behind the counts, beside report.html
ALARMING = (*UNSAFE_FAULT_VERDICTS, INFRA)
MISSING = "-"
NOTE = ("Each verdict's count is followed by the errnos the application got in those runs, at "
        "write, fsync and close (errno:count); none: no such call failed. silent-loss, "
        "fs-corrupt, unmountable and kernel-crash are unsafe.")
VERDICT_NOTES = {
    "clean": "every acknowledged operation intact after a clean unmount and a remount, no error reported",
    "error-reported": "some operations failed and the application was told; nothing acknowledged was lost",
    "silent-loss": "an operation reported success and its data is gone or wrong after the remount, or a read "
                   "returned wrong data without an error: the fsyncgate case",
    "fs-shutdown": "the filesystem shut itself down or went read-only (the reason says which) and was "
                   "consistent after a remount",
}


@dataclass(frozen=True)
class FaultCell:
    """A table cell: its text, and whether it shows an unsafe count."""

    value: str
    bad: bool = False
    href: str = ""  # the fault page's section listing the runs the count stands for


@dataclass(frozen=True)
class FaultTable:
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[FaultCell, ...], ...]


def shown_verdicts(runs: list[FaultResult]) -> tuple[str, ...]:
    return tuple(v for v in FAULT_VERDICTS if v in ALWAYS_SHOWN or any(r.verdict == v for r in runs))


def told_text(runs: list[FaultResult]) -> str:
    """"fsync EIO:2, close EIO:1": the errnos these runs got, per system call."""
    parts = []
    for syscall in ERRNO_SYSCALLS:
        counts = sum((r.errnos(syscall) for r in runs), Counter())
        if counts:
            parts.append(f"{syscall} " + " ".join(f"{name}:{n}" for name, n in sorted(counts.items())))
    return ", ".join(parts)


def fault_anchor(run: FaultResult, verdict: str | None = None) -> str:
    """The id of the fault page's section that lists a row's runs of one verdict."""
    params = [f"{k}={param_text(v)}" for k, v in run.params]
    text = "-".join([run.workload, *params, run.fs, run.fault, verdict or run.verdict])
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def verdict_cell(verdict: str, runs: list[FaultResult]) -> FaultCell:
    """The count of a row's runs with the verdict and what they were told; a count of runs that
    are not clean links to them on the fault page."""
    these = [r for r in runs if r.verdict == verdict]
    told = told_text(these)
    href = f"{PAGE}#{fault_anchor(these[0])}" if these and verdict != "clean" else ""
    return FaultCell(f"{len(these)} ({told})" if told else str(len(these)), bool(these) and verdict in ALARMING, href)


def power_loss_text(runs: list[FaultResult]) -> str:
    """Per model, the verdicts of the power cuts after the fault: "prefix clean:3 data-loss:1"."""
    models: dict[str, Counter] = {}
    for r in runs:
        for model, verdicts in r.power_loss.items():
            if isinstance(verdicts, dict):
                models.setdefault(model, Counter()).update(verdicts)
    return "; ".join(f"{m} " + " ".join(f"{v}:{n}" for v, n in sorted(c.items())) for m, c in models.items())


def _title(workload: str, params: tuple) -> str:
    shown = " ".join(f"{k}={param_text(v)}" for k, v in params)
    return f"faults / {workload}" + (f"  ({shown})" if shown else "")


def fault_tables(runs: list[FaultResult]) -> list[FaultTable]:
    """A table per workload and parameters; rows in the order the runs came."""
    verdicts = shown_verdicts(runs)
    cuts = any(r.power_loss for r in runs)
    by_group: dict[tuple, dict[tuple, list[FaultResult]]] = {}
    for r in runs:
        by_group.setdefault((r.workload, r.params), {}).setdefault((r.fs, r.fault), []).append(r)
    header = ("fs", "fault", "runs", *verdicts, "corruption", *(("after power loss",) if cuts else ()))
    result = []
    for (workload, params), rows in by_group.items():
        shown = []
        for (fs, fault), group in rows.items():
            found = Counter(r.corruption for r in group if r.corruption)
            cells = [FaultCell(fs), FaultCell(fault), FaultCell(str(len(group))),
                     *(verdict_cell(v, group) for v in verdicts),
                     FaultCell(" ".join(f"{k}:{n}" for k, n in sorted(found.items())) or MISSING)]
            if cuts:
                cells.append(FaultCell(power_loss_text(group) or MISSING))
            shown.append(tuple(cells))
        result.append(FaultTable(_title(workload, params), header, tuple(shown)))
    return result


def render_faults(runs: list[FaultResult]) -> str:
    """The fault tables as text, an unsafe count marked with a '!'."""
    if not runs:
        return ""
    lines = []
    for table in fault_tables(runs):
        text = [table.header, *([c.value + ("!" if c.bad else "") for c in row] for row in table.rows)]
        widths = [max(len(row[i]) for row in text) for i in range(len(table.header))]
        lines.append(table.title)
        lines.extend(("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths))).rstrip() for row in text)
        lines.append("")
    lines.append(NOTE + " '!': unsafe.")
    return "\n".join(lines) + "\n"
