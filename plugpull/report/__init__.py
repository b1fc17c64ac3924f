"""Reports on a `plugpull matrix` results file: a terminal table, a plot, a static HTML page.
Fault runs in the file (`plugpull faults`, a case's [faults]) add their tables (`faults`).

The results file is read by `plugpull.results.read_cells`: a truncated last line (an
interrupted run) or a line of a newer schema is skipped with a warning, and a cell that was
run again (same key) replaces the earlier line. The modules: `rates` (a phase's rate and unit,
the order of modes), `cause` (the disk's side of a figure), `seeds` (the seeds side by side),
`tables` (grouping, ratios, the text table), `plot` (the PNG), `html` (the page).
"""

import sys
from collections.abc import Sequence
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import atomic_write, staged_directory
from plugpull.report.faults import PAGE as FAULT_PAGE, render_faults
from plugpull.report.html import render_html
from plugpull.report.pages import STATES_DIR
from plugpull.report.plot import render_plot
from plugpull.report.states import artifacts_dir
from plugpull.report.tables import render_table, render_text
from plugpull.report.unwritten import unwritten
from plugpull.results import CellResult, FaultResult, read_cells, read_faults


def write_report(cells: list[CellResult], warnings: Sequence[str], out_dir: Path,
                 faults: Sequence[FaultResult] = (), results_path: Path | None = None) -> dict[str, Path]:
    """The plot only when there are cells: fault runs alone have no throughput to plot. The
    cells' saved states are looked for beside `results_path` (and where the cells say); the
    state pages go under out_dir/states/ ("states" in the answer, when there are any), the
    fault runs that were not clean on faults.html ("faults")."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir} is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"txt": out_dir / "report.txt", "png": out_dir / "report.png", "html": out_dir / "report.html"}
    text = render_text(cells, warnings) if cells else ""
    atomic_write(paths["txt"], (text + ("\n" if text and faults else "") + render_faults(list(faults))).encode("utf-8"))
    if cells:
        render_plot(cells, paths["png"])
    else:
        del paths["png"]
    pages = render_html(cells, paths.get("png"), paths["html"], warnings, faults, results_path)
    if any(p.parent.name == STATES_DIR for p in pages):
        paths["states"] = out_dir / STATES_DIR
    paths.update({"faults": p for p in pages if p.name == FAULT_PAGE})
    return paths


def results_files(results_path: Path) -> list[Path]:
    """The results file, or every *.jsonl in a results directory."""
    results_path = Path(results_path)
    return sorted(results_path.glob("*.jsonl")) if results_path.is_dir() else [results_path]


def to_report(results_path: Path) -> tuple[list[CellResult], list[FaultResult], list[str]]:
    """The cells and fault runs of a results file (or of every *.jsonl in a directory) and the
    warnings on their skipped lines; UsageError if there is no such file or it holds neither."""
    results_path = Path(results_path)
    if not results_path.exists():
        raise UsageError(f"{results_path}: no such results file")
    cells, faults, warnings = [], [], []
    for path in results_files(results_path):
        found, skipped = read_cells(path)
        runs, broken = read_faults(path)
        cells += found
        faults += runs
        lines = {w.partition(": skipped")[0] for w in skipped}
        warnings += skipped + [w for w in broken if w.partition(": skipped")[0] not in lines]
    if not cells and not faults:
        first = f"; {len(warnings)} lines skipped, the first: {warnings[0]}" if warnings else ""
        raise UsageError(f"{results_path} holds no matrix cells or fault runs "
                         f"(is it written by `plugpull matrix` or `plugpull faults`?){first}")
    return cells, faults, warnings


def cells_to_report(results_path: Path) -> tuple[list[CellResult], list[str]]:
    """The cells of a results file and the warnings on its skipped lines (see `to_report`)."""
    cells, _, warnings = to_report(results_path)
    return cells, warnings


def report(results_path: Path, out_dir: Path) -> dict[str, Path]:
    """Write report.txt, report.png (when there are cells) and report.html into out_dir; their
    paths by kind ("txt", "png", "html"). UsageError if the results file is missing or holds
    neither a cell nor a fault run."""
    cells, faults, warnings = to_report(results_path)
    return write_report(cells, warnings, out_dir, faults, results_path)


def default_out_dir(results: Path) -> Path:
    """Beside a results file; inside a results directory."""
    return results / "report" if results.is_dir() else results.with_name(results.stem + "-report")


def _written(cells, warnings, out_dir: Path, faults, results: Path) -> dict[str, Path]:
    """write_report into a directory staged beside `out_dir` that replaces it whole at the
    end (`files.staged_directory`): a full disk leaves no half report, and is exit 3."""
    try:
        inputs = [results, *(a / "states" for cell in cells if (a := artifacts_dir(cell, results)) is not None)]
        with staged_directory(out_dir, last="report.html", inputs=inputs) as staged:
            paths = write_report(cells, warnings, staged, faults, results)
    except OSError as e:
        raise unwritten(out_dir, e) from None
    return {kind: out_dir / path.relative_to(staged) for kind, path in paths.items()}


def report_main(results: Path, out: Path | None, reference: Path | None = None) -> int:
    """`plugpull report RESULTS [--out DIR] [--reference REF]`: 0 done; 2 no results file, no
    cells, a bad output directory or matplotlib missing. The default DIR is RESULTS' stem +
    "-report"; REF's ratios go beside RESULTS' in the seed sections of the terminal table."""
    results = Path(results)
    out_dir = Path(out) if out else default_out_dir(results)
    try:
        cells, faults, warnings = to_report(results)
        earlier = cells_to_report(Path(reference))[0] if reference else None
        for warning in warnings:
            print(f"plugpull: warning: {warning}", file=sys.stderr)
        paths = _written(cells, warnings, out_dir, faults, results)
    except UsageError as e:
        print(f"plugpull: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        print(f"plugpull: {e.name} is missing: run `make deps`", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"plugpull: {e}", file=sys.stderr)
        return 2
    if cells:
        print(render_table(cells, earlier))
    if faults:
        print(render_faults(faults))
    for kind, path in paths.items():
        print(f"{kind:<6}  {path}")
    print(f"report  {paths['html'].parent}/ (one directory: copy it whole, its links are relative)")
    return 0
