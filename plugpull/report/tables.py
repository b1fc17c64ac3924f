"""The report's tables: cells grouped per filesystem, workload and parameters (and guest
kernel, when the cells ran on several), one row per mode (per stack and mode, for cells run
through a storage stack). A filesystem's tables on several kernels follow each other, oldest
kernel first, each mode compared with barrier on its own kernel.

The table follows the barrier debates' posts: the rate of each phase (the seeds' "op/s" per
phase, or MiB/s for a phase that only moves bytes), how much slower than barrier the mode
is, then what the crash states showed.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from plugpull.report.cause import CAUSE_HEADER, CAUSE_NOTE, cause_columns, fmt_ratio, has_cause
from plugpull.report.rates import BASELINE, MBS, OPS, fmt_rate, mode_rank, rate_of, unit_of
from plugpull.report.seeds import render_seeds
from plugpull.results import INFRA, CellResult, CrashSummary, param_text
from plugpull.testbed.fs import MODES

FS_VERDICTS = ("clean", "data-loss", "inconsistent", "not-writable", "fs-corrupt", "unmountable", "kernel-crash")
ALWAYS_SHOWN = ("clean", "data-loss", "fs-corrupt", "unmountable")
MISSING = "-"
RATIO_NOTE = "vs barrier: the mode's time over barrier's on the first phase (x2.0 = twice as slow)."
ENV_FIELDS = (("accel", "accel"), ("qemu", "QEMU"), ("kernel", "guest kernel"), ("host", "host"),
              ("disk_backing", "disk backing"), ("disk_profile", "disk profile"), ("bus", "disk bus"))


@dataclass(frozen=True)
class Group:
    """The cells of one filesystem, workload, workload parameters and kernel, in mode order."""

    fs: str
    workload: str
    params: tuple[tuple[str, str], ...]  # as shown: (name, value as text)
    cells: tuple[CellResult, ...]
    kernel: str = ""  # the guest kernel's release, when the cells ran on several

    @property
    def title(self) -> str:
        params = " ".join(f"{k}={v}" for k, v in self.params)
        return (f"{self.fs} / {self.workload}" + (f"  ({params})" if params else "")
                + (f"  [kernel {self.kernel}]" if self.kernel else ""))

    @property
    def baseline(self) -> CellResult | None:
        """Barrier with no stack, if the group has it: a stack's rows then show what it costs."""
        barriers = [c for c in self.cells if c.mode == BASELINE]
        return next((c for c in barriers if not stack_of(c)), barriers[0] if barriers else None)

    @property
    def phase_names(self) -> tuple[str, ...]:
        """Phases measured in at least one cell (bonnie++'s '+++++' phases measure nothing)."""
        return tuple(dict.fromkeys(p.name for c in self.cells for p in c.phases if unit_of(p) is not None))

    @property
    def first_phase(self) -> str | None:
        """The phase every mode is compared on, in the ratio and the plot: barrier's first, or
        the first another mode measured when barrier measured none."""
        for cell in (self.baseline, *self.cells):
            if cell is not None and cell.phases:
                return cell.phases[0].name
        return None

    def unit(self, phase: str) -> str:
        units = {unit_of(p) for c in self.cells if (p := c.phase(phase)) is not None}
        return MBS if MBS in units and OPS not in units else OPS

    def label(self, cell: CellResult) -> str:
        """The stack (and the member lost) and the mode; the key's tail too when the group
        holds that row twice (a cell run with other settings that the key tells apart)."""
        if sum(row_of(c) == row_of(cell) for c in self.cells) > 1:
            return f"{row_of(cell)} {cell.key.rsplit('/', 1)[-1]}"
        return row_of(cell)


def stack_of(cell: CellResult) -> str:
    return (cell.settings or {}).get("stack", "")


def row_of(cell: CellResult) -> str:
    """`barrier`, or through a stack `md-raid5 barrier`, or `md-raid5 lose 0 barrier`."""
    lost = (cell.settings or {}).get("lose_disk", "")
    return " ".join(part for part in (stack_of(cell), lost and f"lose {lost}", cell.mode) if part)


def kernel_of(cell: CellResult) -> str:
    return (cell.env.kernel if cell.env else None) or ""


def release_order(release: str) -> tuple:
    """`6.12.117+deb13-amd64` before `7.3.4+deb13-amd64`, and 6.1.0-9 before 6.1.0-50."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", release) if p)


def groups(cells: list[CellResult]) -> list[Group]:
    several = len({kernel_of(c) for c in cells}) > 1
    by_group: dict[tuple, list[CellResult]] = {}
    for cell in cells:
        params = tuple((name, param_text(value)) for name, value in cell.params)
        kernel = kernel_of(cell) if several else ""
        by_group.setdefault((cell.fs, cell.workload, params, release_order(kernel), kernel), []).append(cell)
    return [Group(fs, workload, params, tuple(sorted(members, key=lambda c: (stack_of(c), mode_rank(c.mode)))),
                  kernel)
            for (fs, workload, params, _, kernel), members in sorted(by_group.items())]


def slowdown(cell: CellResult, group: Group) -> float | None:
    """How many times longer than barrier `cell` takes on the first phase. Rates are compared,
    not seconds, so cells that did different amounts of work still compare fairly."""
    name = group.first_phase
    baseline = group.baseline
    if name is None or baseline is None:
        return None
    unit = group.unit(name)
    base, mine = baseline.phase(name), cell.phase(name)
    base_rate = rate_of(base, unit) if base else None
    my_rate = rate_of(mine, unit) if mine else None
    if not base_rate or not my_rate:
        return None
    return base_rate / my_rate


def fmt_count(value: int | None) -> str:
    return MISSING if value is None else str(value)


def phase_text(cell: CellResult, name: str, unit: str) -> str:
    """The phase's rate in the column's unit, or in its own unit (named) if only that is known."""
    phase = cell.phase(name)
    if phase is None:
        return MISSING
    rate = rate_of(phase, unit)
    own = unit_of(phase)
    if rate is None and own not in (None, unit) and rate_of(phase, own) is not None:
        return f"{fmt_rate(rate_of(phase, own))} {own}"
    return fmt_rate(rate)


@dataclass(frozen=True)
class Table:
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    crash_from: int  # index of the first crash column

    @property
    def all_rows(self) -> tuple[tuple[str, ...], ...]:
        return (self.header, *self.rows)


def shown_verdicts(cells: list[CellResult]) -> tuple[str, ...]:
    """The verdict columns: the usual four, and any other verdict some cell counted."""
    return tuple(v for v in (*FS_VERDICTS, INFRA)
                 if v in ALWAYS_SHOWN or any(c.crash and c.crash.count(v) for c in cells))


def tables(cells: list[CellResult]) -> list[Table]:
    """A table per group. `states` counts cuts (the verdicts count them too); `distinct`, shown
    when some cell knows it, the distinct states checked for them; the cause columns, when
    some cell read the disk's counters, on the same phase as 'vs barrier'."""
    verdicts = shown_verdicts(cells)
    distinct = ("distinct",) if any(c.crash and c.crash.distinct is not None for c in cells) else ()
    result = []
    for group in groups(cells):
        names = group.phase_names
        units = [group.unit(n) for n in names]
        causes = CAUSE_HEADER if has_cause(group.cells) else ()
        header = ("mode", *(f"{n} {u}" for n, u in zip(names, units)), "vs barrier", *causes, "states",
                  *distinct, *verdicts)
        rows = []
        for cell in group.cells:
            crash = cell.crash or CrashSummary()
            rows.append((group.label(cell), *(phase_text(cell, n, u) for n, u in zip(names, units)),
                         fmt_ratio(slowdown(cell, group)),
                         *(cause_columns(cell, group.baseline, group.first_phase) if causes else ()),
                         fmt_count(crash.states),
                         *(fmt_count(crash.distinct) for _ in distinct),
                         *(fmt_count(crash.count(v)) for v in verdicts)))
        result.append(Table(group.title, header, tuple(rows), crash_from=len(names) + 2 + len(causes)))
    return result


def environment(cells: list[CellResult]) -> list[tuple[str, str]]:
    """What the cells ran on; a field that differs between cells lists every value seen."""
    envs = [c.env for c in cells if c.env is not None]
    rows = []
    for field, label in ENV_FIELDS:
        values = dict.fromkeys(v for e in envs if (v := getattr(e, field)) is not None)
        rows.append((label, "; ".join(values) or MISSING))
    versions: dict[str, dict[str, None]] = {}
    for env in envs:
        for name, version in env.packages:
            versions.setdefault(name, {})[version] = None
    packages = ", ".join(f"{n} {' / '.join(v)}" for n, v in sorted(versions.items()))
    rows.insert(3, ("packages", packages or MISSING))
    models = dict.fromkeys(m for c in cells if c.crash for m in c.crash.models)
    rows.append(("power-loss models", ", ".join(models) or MISSING))
    return rows


def mode_notes(cells: list[CellResult]) -> list[tuple[str, str]]:
    modes = sorted({c.mode for c in cells}, key=mode_rank)
    return [(m, MODES[m].summary if m in MODES else "no description") for m in modes]


def failures(cells: list[CellResult]) -> list[str]:
    """The cells the harness failed on: their missing measurements are no filesystem verdict."""
    return [f"{c.key}: {c.error}" for c in cells if c.error]


def render_table(cells: list[CellResult], reference: list[CellResult] | None = None) -> str:
    if not cells:
        return "no cells\n"
    lines = []
    for table in tables(cells):
        widths = [max(len(r[i]) for r in table.all_rows) for i in range(len(table.header))]
        lines.append(table.title)
        for row in table.all_rows:
            parts = [row[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(row[1:], widths[1:])]
            throughput, crash = parts[:table.crash_from], parts[table.crash_from:]
            lines.append(("  " + "  ".join(throughput) + "  |  " + "  ".join(crash)).rstrip())
        lines.append("")
    lines.append(RATIO_NOTE)
    if has_cause(cells):
        lines.append(CAUSE_NOTE)
    lines.append(f"'{MISSING}': not measured.")
    if failures(cells):
        lines.append("incomplete cells:")
        lines.extend(f"  {f}" for f in failures(cells))
    seeds = render_seeds(cells, reference)
    return "\n".join(lines) + "\n" + (f"\n{seeds}" if seeds else "")


def render_text(cells: list[CellResult], warnings: Sequence[str] = ()) -> str:
    """The table, the environment and the warnings: the report as a text file."""
    env = environment(cells)
    width = max(len(label) for label, _ in env)
    text = render_table(cells) + "\nenvironment\n"
    text += "".join(f"  {label.ljust(width)}  {value}\n" for label, value in env)
    if warnings:
        text += "\nwarnings\n" + "".join(f"  {w}\n" for w in warnings)
    return text
