"""The report's plot: per group, throughput against the share of crash states that are not
clean, one point per mode. matplotlib is imported only when a figure is drawn."""

import io
import math
from dataclasses import dataclass
from pathlib import Path

from plugpull.files import atomic_write
from plugpull.report.rates import OPS, rate_of
from plugpull.report.tables import groups
from plugpull.results import CellResult

MODE_COLORS = {"barrier": "#1e7b3a", "nocache": "#1f5fa8", "extlog": "#148f8a",
               "nobarrier": "#c0392b", "lying": "#d2691e"}


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


def panels(cells: list[CellResult]) -> list[Panel]:
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


def plot_png(cells: list[CellResult]) -> bytes:
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
    fig.supylabel("crash states not clean: what it risks\n(every unsafe verdict; "
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


def render_plot(cells: list[CellResult], png_path: Path) -> None:
    atomic_write(png_path, plot_png(cells))
