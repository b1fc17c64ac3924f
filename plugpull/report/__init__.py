"""Reports on a `plugpull matrix` results file: a terminal table, a plot, a static HTML page.

The results file is read by `plugpull.results.read_cells`: a truncated last line (an
interrupted run) or a line of a newer schema is skipped with a warning, and a cell that was
run again (same key) replaces the earlier line. The modules: `tables` (grouping, ratios, the
text table), `plot` (the PNG), `html` (the page).
"""

import sys
from collections.abc import Sequence
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import atomic_write
from plugpull.report.html import render_html
from plugpull.report.plot import render_plot
from plugpull.report.tables import render_table, render_text
from plugpull.results import CellResult, read_cells


def write_report(cells: list[CellResult], warnings: Sequence[str], out_dir: Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir} is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"txt": out_dir / "report.txt", "png": out_dir / "report.png", "html": out_dir / "report.html"}
    atomic_write(paths["txt"], render_text(cells, warnings).encode("utf-8"))
    render_plot(cells, paths["png"])
    render_html(cells, paths["png"], paths["html"], warnings)
    return paths


def cells_to_report(results_path: Path) -> tuple[list[CellResult], list[str]]:
    """The cells of a results file and the warnings on its skipped lines; UsageError if there
    is no such file or it holds no cell."""
    results_path = Path(results_path)
    if not results_path.is_file():
        raise UsageError(f"{results_path}: no such results file")
    cells, warnings = read_cells(results_path)
    if not cells:
        raise UsageError(f"{results_path} holds no matrix cells (is it written by `plugpull matrix`?)")
    return cells, warnings


def report(results_path: Path, out_dir: Path) -> dict[str, Path]:
    """Write report.txt, report.png and report.html into out_dir; their paths by kind
    ("txt", "png", "html"). UsageError if the results file is missing or holds no cell."""
    cells, warnings = cells_to_report(results_path)
    return write_report(cells, warnings, out_dir)


def default_out_dir(results: Path) -> Path:
    return results.with_name(results.stem + "-report")


def report_main(results: Path, out: Path | None, reference: Path | None = None) -> int:
    """`plugpull report RESULTS [--out DIR] [--reference REF]`: 0 done; 2 no results file, no
    cells, a bad output directory or matplotlib missing. The default DIR is RESULTS' stem +
    "-report"; REF's ratios go beside RESULTS' in the seed sections of the terminal table."""
    results = Path(results)
    try:
        cells, warnings = cells_to_report(results)
        earlier = cells_to_report(Path(reference))[0] if reference else None
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
    print(render_table(cells, earlier))
    for kind in ("txt", "png", "html"):
        print(f"{kind:<4}  {paths[kind]}")
    return 0
