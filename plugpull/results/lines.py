"""The results file: JSON lines, one `CellResult` each, appended whole and read back."""

import json
import os
from pathlib import Path

from plugpull.results.schema import CellResult


def _cell_of_line(line: str, last: bool) -> CellResult | None:
    """The cell on a line, None for a line of another kind; ValueError: why it is skipped."""
    try:
        doc = json.loads(line)
    except json.JSONDecodeError:
        raise ValueError("truncated (an interrupted run?)" if last else "not valid JSON") from None
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if doc.get("kind") != "cell":
        return None
    return CellResult.from_json(doc)


def read_cells(path: Path) -> tuple[list[CellResult], list[str]]:
    """The cells of a results file (none if there is no file) and a warning per line that was
    skipped. The last line of a key wins; lines of other kinds are passed over quietly."""
    path = Path(path)
    if not path.is_file():
        return [], []
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    cells: dict[str, CellResult] = {}
    warnings = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            cell = _cell_of_line(line, i == last)
        except ValueError as e:
            warnings.append(f"{path}:{i + 1}: skipped, {e}")
            continue
        if cell is not None:
            cells[cell.key] = cell
    return list(cells.values()), warnings


def append_line(results: Path, doc: dict) -> None:
    """One write of one whole line on an O_APPEND descriptor, then fsync. After a torn last
    line (an interrupted run) the new line starts on a line of its own."""
    results = Path(results)
    results.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(doc, sort_keys=True) + "\n").encode()
    if results.is_file() and results.stat().st_size:
        with open(results, "rb") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                data = b"\n" + data
    fd = os.open(results, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.write(fd, data) != len(data):
            raise OSError(f"short write to {results}")
        os.fsync(fd)
    finally:
        os.close(fd)
