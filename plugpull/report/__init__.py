"""Reports on a `plugpull matrix` results file: a terminal table, a plot, a static HTML page.

The results file holds one JSON object per line, appended as each matrix cell finishes, so
an interrupted run can leave a truncated last line: it is skipped with a warning. A cell that
was run again (same key) replaces the earlier line.

The table follows the barrier debates' posts: per filesystem and workload, one row per mode,
the rate of each phase (the seeds' "op/s" per phase, or MiB/s for a phase that only moves
bytes), how much slower than barrier the mode is, then what the crash states showed.
"""

import base64
import html
import io
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from plugpull.files import atomic_write
from plugpull.errors import UsageError
from plugpull.lab.fs import MODES
from plugpull.lab.parsers import Phase

OPS, MBS = "op/s", "MiB/s"
BASELINE = "barrier"
MODE_ORDER = ("barrier", "nobarrier", "nocache", "lying", "extlog")
FS_VERDICTS = ("clean", "data-loss", "fs-corrupt", "unmountable")
UNSAFE_VERDICTS = ("data-loss", "fs-corrupt", "unmountable")
INFRA = "infra-error"
MISSING = "-"

VERDICT_NOTES = {
    "clean": "the journal recovery mounted it, fsck found nothing, every operation the guest "
             "was told is durable (fsync returned) is intact",
    "data-loss": "the filesystem is consistent, but an operation the guest was told is durable "
                 "is missing or wrong",
    "fs-corrupt": "the recovery mount worked, but fsck found damage (or unmounting failed)",
    "unmountable": "the recovery mount failed",
    "infra-error": "the checker itself failed: not a verdict on the filesystem, left out of "
                   "the shares",
}
MODE_COLORS = {"barrier": "#1e7b3a", "nocache": "#1f5fa8", "extlog": "#148f8a",
               "nobarrier": "#c0392b", "lying": "#d2691e"}
ENV_FIELDS = (("accel", "accel"), ("qemu", "QEMU"), ("kernel", "guest kernel"), ("host", "host"),
              ("disk_backing", "disk backing"), ("disk_profile", "disk profile"), ("bus", "disk bus"))


def unit_of(phase: Phase) -> str | None:
    """The rate a phase is best read in: operations when it counted them (or bonnie++ gave
    a file rate), MiB/s when it moved bytes."""
    if phase.op_rate is not None:
        return OPS
    return MBS if phase.mb_rate is not None else None


def rate_of(phase: Phase, unit: str | None) -> float | None:
    return phase.op_rate if unit == OPS else phase.mb_rate if unit == MBS else None


@dataclass(frozen=True)
class Throughput:
    phases: tuple[Phase, ...] = ()
    recorder_overhead: float | None = None


@dataclass(frozen=True)
class Crash:
    states: int | None = None
    models: tuple[str, ...] = ()
    clean: int | None = None
    data_loss: int | None = None
    fs_corrupt: int | None = None
    unmountable: int | None = None
    infra_error: int | None = None

    def count(self, verdict: str) -> int | None:
        return getattr(self, verdict.replace("-", "_"))

    @property
    def unsafe_share(self) -> float | None:
        """The share of checked states that are not clean. Infra-errors are left out of both
        sides: they say nothing about the filesystem."""
        unsafe = [self.count(v) for v in UNSAFE_VERDICTS]
        if None in unsafe:
            return None
        if self.states is not None:
            checked = self.states - (self.infra_error or 0)
        elif self.clean is not None:
            checked = self.clean + sum(unsafe)
        else:
            return None
        return sum(unsafe) / checked if checked > 0 else None


@dataclass(frozen=True)
class Env:
    accel: str | None = None
    qemu: str | None = None
    kernel: str | None = None
    packages: tuple[tuple[str, str], ...] = ()
    host: str | None = None
    disk_backing: str | None = None
    disk_profile: str | None = None
    bus: str | None = None


@dataclass(frozen=True)
class Cell:
    key: str
    fs: str
    mode: str
    workload: str
    params: tuple[tuple[str, str], ...] = ()
    throughput: Throughput | None = None
    crash: Crash | None = None
    env: Env | None = None
    started: str | None = None
    seconds: float | None = None
    error: str | None = None  # the harness failed; what was measured before is kept

    @property
    def phases(self) -> tuple[Phase, ...]:
        return self.throughput.phases if self.throughput else ()

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)


# --- reading -------------------------------------------------------------------------------

def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _count(value) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


def _text(value) -> str | None:
    return None if value is None else str(value)


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _param_value(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def parse_cell(doc: dict) -> Cell:
    """A Cell from one decoded results line; ValueError if it names no fs, mode or workload."""
    names = {f: doc.get(f) for f in ("fs", "mode", "workload")}
    absent = [f for f, v in names.items() if not isinstance(v, str) or not v]
    if absent:
        raise ValueError(f"a cell without {', '.join(absent)}")
    params = tuple(sorted((str(k), _param_value(v)) for k, v in _dict(doc.get("params")).items()))
    key = doc.get("key") if isinstance(doc.get("key"), str) else "/".join(
        [names["fs"], names["mode"], names["workload"], *(f"{k}={v}" for k, v in params)])
    return Cell(key=key, **names, params=params, throughput=_throughput(doc.get("throughput")),
                crash=_crash(doc.get("crash")), env=_env(doc.get("env")),
                started=_text(doc.get("started")), seconds=_number(doc.get("seconds")),
                error=_text(doc.get("error")))


def _throughput(doc) -> Throughput | None:
    if not isinstance(doc, dict):
        return None
    phases = doc.get("phases") if isinstance(doc.get("phases"), list) else []
    return Throughput(
        phases=tuple(Phase(name=str(p.get("name") or f"phase {i + 1}"), seconds=_number(p.get("seconds")),
                           ops=_number(p.get("ops")), bytes=_number(p.get("bytes")),
                           ops_per_s=_number(p.get("ops_per_s")), mb_per_s=_number(p.get("mb_per_s")))
                     for i, p in enumerate(phases) if isinstance(p, dict)),
        recorder_overhead=_number(doc.get("recorder_overhead")))


def _crash(doc) -> Crash | None:
    if not isinstance(doc, dict):
        return None
    summary = _dict(doc.get("summary"))
    models = doc.get("models") if isinstance(doc.get("models"), list) else []
    return Crash(states=_count(doc.get("states")), models=tuple(str(m) for m in models),
                 **{v.replace("-", "_"): _count(summary.get(v)) for v in (*FS_VERDICTS, INFRA)})


def _env(doc) -> Env | None:
    if not isinstance(doc, dict):
        return None
    packages = tuple(sorted((str(k), str(v)) for k, v in _dict(doc.get("packages")).items()))
    return Env(packages=packages, **{f: _text(doc.get(f)) for f, _ in ENV_FIELDS})


def load_results(path: Path) -> tuple[list[Cell], list[str]]:
    """The cells of a results file and warnings about the lines that were skipped. The last
    line of a key wins; lines of other kinds are not cells and are passed over quietly."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    cells: dict[str, Cell] = {}
    warnings = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        where = f"{path}:{i + 1}"
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            why = "truncated (an interrupted run?)" if i == last else "not valid JSON"
            warnings.append(f"{where}: skipped, {why}")
            continue
        if not isinstance(doc, dict):
            warnings.append(f"{where}: skipped, not a JSON object")
            continue
        if doc.get("kind") != "cell":
            continue
        try:
            cell = parse_cell(doc)
        except ValueError as e:
            warnings.append(f"{where}: skipped, {e}")
            continue
        cells[cell.key] = cell
    return list(cells.values()), warnings


# --- shaping -------------------------------------------------------------------------------

def mode_rank(mode: str) -> tuple[int, str]:
    return (MODE_ORDER.index(mode), "") if mode in MODE_ORDER else (len(MODE_ORDER), mode)


@dataclass(frozen=True)
class Group:
    """The cells of one filesystem, workload and workload parameters, in mode order."""

    fs: str
    workload: str
    params: tuple[tuple[str, str], ...]
    cells: tuple[Cell, ...]

    @property
    def title(self) -> str:
        params = " ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.fs} / {self.workload}" + (f"  ({params})" if params else "")

    @property
    def baseline(self) -> Cell | None:
        return next((c for c in self.cells if c.mode == BASELINE), None)

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

    def label(self, cell: Cell) -> str:
        """The mode, and the key's tail too when the group holds that mode twice (a cell run
        with other settings that the key tells apart)."""
        if sum(c.mode == cell.mode for c in self.cells) > 1:
            return f"{cell.mode} {cell.key.rsplit('/', 1)[-1]}"
        return cell.mode


def groups(cells: list[Cell]) -> list[Group]:
    by_group: dict[tuple, list[Cell]] = {}
    for cell in cells:
        by_group.setdefault((cell.fs, cell.workload, cell.params), []).append(cell)
    return [Group(fs, workload, params, tuple(sorted(members, key=lambda c: mode_rank(c.mode))))
            for (fs, workload, params), members in sorted(by_group.items())]


def slowdown(cell: Cell, group: Group) -> float | None:
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


def fmt_rate(value: float | None) -> str:
    if value is None:
        return MISSING
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"x{value:.1f}" if value >= 1 else f"x{value:.2f}"


def fmt_count(value: int | None) -> str:
    return MISSING if value is None else str(value)


def phase_text(cell: Cell, name: str, unit: str) -> str:
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


def show_infra(cells: list[Cell]) -> bool:
    return any(c.crash and c.crash.infra_error for c in cells)


def tables(cells: list[Cell]) -> list[Table]:
    verdicts = (*FS_VERDICTS, INFRA) if show_infra(cells) else FS_VERDICTS
    result = []
    for group in groups(cells):
        names = group.phase_names
        units = [group.unit(n) for n in names]
        header = ("mode", *(f"{n} {u}" for n, u in zip(names, units)), "vs barrier", "states", *verdicts)
        rows = []
        for cell in group.cells:
            crash = cell.crash or Crash()
            rows.append((group.label(cell), *(phase_text(cell, n, u) for n, u in zip(names, units)),
                         fmt_ratio(slowdown(cell, group)), fmt_count(crash.states),
                         *(fmt_count(crash.count(v)) for v in verdicts)))
        result.append(Table(group.title, header, tuple(rows), crash_from=len(names) + 2))
    return result


def environment(cells: list[Cell]) -> list[tuple[str, str]]:
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


def mode_notes(cells: list[Cell]) -> list[tuple[str, str]]:
    modes = sorted({c.mode for c in cells}, key=mode_rank)
    return [(m, MODES[m].summary if m in MODES else "no description") for m in modes]


def failures(cells: list[Cell]) -> list[str]:
    """The cells the harness failed on: their missing measurements are no filesystem verdict."""
    return [f"{c.key}: {c.error}" for c in cells if c.error]


RATIO_NOTE = "vs barrier: the mode's time over barrier's on the first phase (x2.0 = twice as slow)."


# --- text ----------------------------------------------------------------------------------

def render_table(cells: list[Cell]) -> str:
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
    lines.append(f"'{MISSING}': not measured.")
    if failures(cells):
        lines.append("incomplete cells:")
        lines.extend(f"  {f}" for f in failures(cells))
    return "\n".join(lines) + "\n"


def render_text(cells: list[Cell], warnings: Sequence[str] = ()) -> str:
    """The table, the environment and the warnings: the report as a text file."""
    env = environment(cells)
    width = max(len(label) for label, _ in env)
    text = render_table(cells) + "\nenvironment\n"
    text += "".join(f"  {label.ljust(width)}  {value}\n" for label, value in env)
    if warnings:
        text += "\nwarnings\n" + "".join(f"  {w}\n" for w in warnings)
    return text


# --- files ---------------------------------------------------------------------------------

write_atomic = atomic_write


# --- plot ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Point:
    label: str
    mode: str
    x: float  # throughput of the group's first phase
    y: float  # share of crash states that are not clean, 0..1


@dataclass(frozen=True)
class Panel:
    title: str
    x_label: str
    points: tuple[Point, ...]
    left_out: tuple[str, ...]  # "mode (why)" for cells that could not be placed


def panels(cells: list[Cell]) -> list[Panel]:
    result = []
    for group in groups(cells):
        name = group.first_phase
        unit = group.unit(name) if name else OPS
        points, left_out = [], []
        for cell in group.cells:
            phase = cell.phase(name) if name else None
            x = rate_of(phase, unit) if phase else None
            y = cell.crash.unsafe_share if cell.crash else None
            if x is None or y is None:
                missing = " and ".join(what for what, v in (("throughput", x), ("crash states", y)) if v is None)
                left_out.append(f"{group.label(cell)} (no {missing})")
            else:
                points.append(Point(group.label(cell), cell.mode, x, y))
        x_label = f"{name} ({unit})" if name else "no throughput measured"
        result.append(Panel(group.title, x_label, tuple(points), tuple(left_out)))
    return result


def _plain_number(value: float, _position=None) -> str:
    """Tick labels a storage person reads at a glance: 100 and 0.5, not 10^2 and 5x10^-1."""
    return f"{value:g}"


def _plain_number_at_2_and_5(value: float, _position=None) -> str:
    leading = round(value / 10 ** math.floor(math.log10(value))) if value > 0 else 0
    return _plain_number(value) if leading in (2, 5) else ""


def _draw_panel(ax, panel: Panel) -> None:
    from matplotlib.ticker import FuncFormatter, PercentFormatter

    ax.set_title(panel.title + ("\nnot shown: " + ", ".join(panel.left_out) if panel.left_out else ""),
                 fontsize=9.5)
    ax.set_ylim(-6, 106)
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    ax.grid(True, color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    if not panel.points:
        ax.set_xticks([])
        ax.text(0.5, 0.5, "nothing to plot", transform=ax.transAxes, ha="center", color="#777777")
        return
    xs = [p.x for p in panel.points]
    logarithmic = min(xs) > 0 and max(xs) / min(xs) >= 10
    x_low, x_high = (min(xs) / 1.8, max(xs) * 1.8) if logarithmic else (0, max(xs) * 1.3 or 1)
    if logarithmic:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(_plain_number))
        ax.xaxis.set_minor_formatter(FuncFormatter(_plain_number_at_2_and_5))
    ax.set_xlim(x_low, x_high)
    ax.set_xlabel(panel.x_label + (", log scale" if logarithmic else ""), fontsize=9)
    for p in panel.points:
        ax.scatter([p.x], [p.y * 100], s=46, color=MODE_COLORS.get(p.mode, "#555555"),
                   edgecolor="white", linewidth=0.8, zorder=3)


# Where a point's label may go, in order of preference: (dx, dy) in points, alignment.
LABEL_SPOTS = tuple(
    [((8, 0), "left", "center"), ((-8, 0), "right", "center"), ((6, 4), "left", "bottom"),
     ((-6, 4), "right", "bottom"), ((6, -4), "left", "top"), ((-6, -4), "right", "top")]
    + [((8 * side, 12 * k * up), "left" if side > 0 else "right", "bottom" if up > 0 else "top")
       for k in (1, 2, 3, 4) for up in (1, -1) for side in (1, -1)])
BESIDE = 6  # LABEL_SPOTS past this many are away from the point: a leader line joins them


def _label_points(ax, panel: Panel, renderer) -> None:
    """Label each point with its mode at the first spot that stays inside the panel and clear
    of the other points and labels: modes often land on top of each other (0% not clean)."""
    from matplotlib.transforms import Bbox

    frame = ax.get_window_extent(renderer)
    centres = [ax.transData.transform((p.x, p.y * 100)) for p in panel.points]
    markers = [Bbox.from_extents(x - 5, y - 5, x + 5, y + 5) for x, y in centres]
    taken: list = []
    for i, p in sorted(enumerate(panel.points), key=lambda item: (item[1].y, item[1].x)):
        color = MODE_COLORS.get(p.mode, "#555555")
        text = ax.annotate(p.label, (p.x, p.y * 100), xytext=(0, 0), textcoords="offset points", fontsize=9,
                           color=color, arrowprops=dict(arrowstyle="-", color=color, lw=0.6, shrinkA=1, shrinkB=4))
        text.set_in_layout(False)
        obstacles = taken + markers[:i] + markers[i + 1:]
        chosen = next((n for n, spot in enumerate(LABEL_SPOTS)
                       if _fits(_put(text, spot, renderer), frame, obstacles)), 0)
        taken.append(_put(text, LABEL_SPOTS[chosen], renderer))
        text.arrow_patch.set_visible(chosen >= BESIDE)


def _put(text, spot, renderer):
    """Move the label to `spot`; the box of its text, leaving out its leader line."""
    from matplotlib.text import Text

    offset, ha, va = spot
    text.xyann = offset
    text.set_horizontalalignment(ha)
    text.set_verticalalignment(va)
    text.update_positions(renderer)
    return Text.get_window_extent(text, renderer)


def _fits(box, frame, obstacles) -> bool:
    inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
    return inside and not any(box.overlaps(o) for o in obstacles)


def plot_png(cells: list[Cell]) -> bytes:
    """The figure as PNG bytes. matplotlib is imported here, with the Agg canvas and without
    pyplot, so reading results and the table never need it and nothing opens a display."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shown = panels(cells) or [Panel("no cells", "", (), ())]
    columns = 1 if len(shown) == 1 else 2 if len(shown) <= 4 else 3
    rows = math.ceil(len(shown) / columns)
    fig = Figure(figsize=(5.4 * columns + 0.6, 3.9 * rows + 1.3), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle("What safety costs vs what it risks, per barrier / write-cache mode", fontsize=12.5)
    fig.supxlabel("throughput of the workload's first phase: what safety costs (further right = faster)",
                  fontsize=10)
    fig.supylabel("crash states not clean: what it risks\n(data-loss + fs-corrupt + unmountable, "
                  "infra-errors left out)", fontsize=10)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, panel in zip(axes, shown):
        _draw_panel(ax, panel)
    for ax in axes[len(shown):]:
        ax.set_visible(False)
    fig.get_layout_engine().execute(fig)
    renderer = fig.canvas.get_renderer()
    for ax, panel in zip(axes, shown):
        _label_points(ax, panel, renderer)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def render_plot(cells: list[Cell], png_path: Path) -> None:
    write_atomic(png_path, plot_png(cells))


# --- HTML ----------------------------------------------------------------------------------

CSS = """
body { font: 15px/1.45 system-ui, sans-serif; color: #222; max-width: 1100px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.8em; }
h3 { font-size: 1em; margin: 1.4em 0 0.4em; font-family: ui-monospace, monospace; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e3e3e3; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; font-weight: 600; }
td:first-child, th:first-child { text-align: left; }
.crash-start { border-left: 2px solid #bbb; }
td.bad { background: #fbe3e0; color: #8b1a10; font-weight: 600; }
table.env td { text-align: left; white-space: normal; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.3em 1.2em; }
dt { font-weight: 600; font-family: ui-monospace, monospace; } dd { margin: 0; }
img { max-width: 100%; border: 1px solid #e3e3e3; }
.note, .sub { color: #555; } .warn { color: #8b4a00; }
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _html_table(table: Table) -> str:
    def cell(tag: str, i: int, value: str, header: bool) -> str:
        classes = ["crash-start"] if i == table.crash_from else []
        verdict = table.header[i]
        if not header and verdict in (*UNSAFE_VERDICTS, INFRA) and value not in (MISSING, "0"):
            classes.append("bad")
        attr = f' class="{" ".join(classes)}"' if classes else ""
        return f"<{tag}{attr}>{_e(value)}</{tag}>"

    head = "".join(cell("th", i, v, True) for i, v in enumerate(table.header))
    body = "".join("<tr>" + "".join(cell("td", i, v, False) for i, v in enumerate(row)) + "</tr>\n"
                   for row in table.rows)
    return f"<h3>{_e(table.title)}</h3>\n<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n"


def _definitions(pairs) -> str:
    return "<dl>\n" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>\n" for k, v in pairs) + "</dl>\n"


def html_page(cells: list[Cell], png: bytes, warnings: Sequence[str] = ()) -> str:
    image = base64.b64encode(png).decode("ascii")
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        "<title>plugpull report: what safety costs, what it risks</title>\n",
        f"<style>{CSS}</style>\n</head>\n<body>\n",
        "<h1>What safety costs, what it risks</h1>\n",
        f'<p class="sub">{len(cells)} matrix cells: throughput of each workload phase per '
        "barrier / write-cache mode, and the verdicts on the crash states after the plug was pulled.</p>\n",
        "<h2>Throughput and crash states</h2>\n",
        *(_html_table(t) for t in tables(cells)),
        f'<p class="note">{_e(RATIO_NOTE)} A dash: not measured.</p>\n',
        *(f'<p class="warn">incomplete cell {_e(f)}</p>\n' for f in failures(cells)),
        "<h2>Cost against risk</h2>\n",
        f'<img src="data:image/png;base64,{image}" alt="throughput against the share of crash '
        'states that are not clean, one point per mode">\n',
        "<h2>Environment</h2>\n<table class=\"env\">\n",
        *(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>\n" for k, v in environment(cells)),
        "</table>\n<h2>Verdicts</h2>\n",
        _definitions((v, VERDICT_NOTES[v]) for v in (*FS_VERDICTS, INFRA)),
        "<h2>Modes</h2>\n",
        _definitions(mode_notes(cells)),
    ]
    if warnings:
        parts.append('<h2>Warnings</h2>\n<ul class="warn">\n')
        parts.extend(f"<li>{_e(w)}</li>\n" for w in warnings)
        parts.append("</ul>\n")
    parts.append("</body>\n</html>\n")
    return "".join(parts)


def render_html(cells: list[Cell], png_path: Path, html_path: Path, warnings: Sequence[str] = ()) -> None:
    write_atomic(html_path, html_page(cells, Path(png_path).read_bytes(), warnings).encode("utf-8"))


# --- entry points --------------------------------------------------------------------------

def write_report(cells: list[Cell], warnings: Sequence[str], out_dir: Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir} is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"txt": out_dir / "report.txt", "png": out_dir / "report.png", "html": out_dir / "report.html"}
    write_atomic(paths["txt"], render_text(cells, warnings).encode("utf-8"))
    render_plot(cells, paths["png"])
    render_html(cells, paths["png"], paths["html"], warnings)
    return paths


def _load_cells(results_path: Path) -> tuple[list[Cell], list[str]]:
    results_path = Path(results_path)
    if not results_path.is_file():
        raise UsageError(f"{results_path}: no such results file")
    cells, warnings = load_results(results_path)
    if not cells:
        raise UsageError(f"{results_path} holds no matrix cells (is it written by `plugpull matrix`?)")
    return cells, warnings


def report(results_path: Path, out_dir: Path) -> dict[str, Path]:
    """Write report.txt, report.png and report.html into out_dir; their paths by kind
    ("txt", "png", "html"). UsageError if the results file is missing or holds no cell."""
    cells, warnings = _load_cells(results_path)
    return write_report(cells, warnings, out_dir)


def default_out_dir(results: Path) -> Path:
    return results.with_name(results.stem + "-report")


def report_main(results: Path, out: Path | None) -> int:
    """`plugpull report RESULTS [--out DIR]`: 0 done; 2 no results file, no cells, a bad
    output directory or matplotlib missing. The default DIR is RESULTS' stem + "-report"."""
    results = Path(results)
    try:
        cells, warnings = _load_cells(results)
        for warning in warnings:
            print(f"plugpull: warning: {warning}", file=sys.stderr)
        paths = write_report(cells, warnings, Path(out) if out else default_out_dir(results))
    except UsageError as e:
        print(f"plugpull: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        print(f"plugpull: {e.name} is missing: run `make deps`", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"plugpull: {e}", file=sys.stderr)
        return 2
    print(render_table(cells))
    for kind in ("txt", "png", "html"):
        print(f"{kind:<4}  {paths[kind]}")
    return 0
