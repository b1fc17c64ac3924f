"""How a table fits a 1280 px window on the page: its headers may wrap inside long words and
after a '/', and a table too wide even so is shown as two, one above the other: the
throughput columns, then the crash-state columns, each led by the mode. The width is
estimated from the text (the browser test, tests/unit/report/test_report_browser.py, measures it)."""

import re

SOFT_HYPHEN = "\u00ad"
BREAKS = {"inconsistent": "incon-sistent", "unmountable": "unmount-able", "distinct": "dis-tinct"}
CHAR_PX = 7.6  # a character of the tables' 12.5 px font, bold headers included, rounded up
CELL_PX = 10  # a cell's padding and border
PAGE_PX = 1200  # what a table may take of a 1280 px window (the scrollbar and the margins off)


def breakable(header: str) -> str:
    """A column header that may wrap inside its long words (a soft hyphen) and after a '/'
    that a word follows (not inside "op/s")."""
    for word, split in BREAKS.items():
        header = header.replace(word, split.replace("-", SOFT_HYPHEN))
    return re.sub(r"/(?=\w{3})", "/\u200b", header)


def column_px(header: str, values: list[str]) -> float:
    """A column's width: its longest header piece (the header wraps) or its widest value."""
    pieces = re.split(r"[\s\u00ad\u200b-]+", breakable(header))
    return max(len(text) for text in [*pieces, *values]) * CHAR_PX + CELL_PX


def parts(header: list[str], rows: list[list[str]], crash_from: int) -> list[list[int]]:
    """The column indexes of each table the page shows: all of them in one when it fits,
    else the throughput columns and the crash columns (both with the first, the mode)."""
    columns = list(range(len(header)))
    width = sum(column_px(header[i], [row[i] for row in rows]) for i in columns)
    if width <= PAGE_PX or not 1 < crash_from < len(header):
        return [columns]
    return [columns[:crash_from], [0, *columns[crash_from:]]]
