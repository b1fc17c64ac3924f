"""Whole numbers as a user writes them, read by one rule everywhere: on the command line, in
a case file, in a workload's parameters, inside a spelled value (`acks:N`, `cache:MiB`).

ASCII digits only (no `²`, no `--5`, no `1_000`), and every number has a range: a count or
a size is at most `COUNT_MAX`, a seed at most `SEED_MAX`, a disk or cache size in MiB at most
`MIB_MAX`. A value outside its range is refused with the range, never run.
"""

import re

COUNT_MAX = 10**6
SEED_MAX = 2**32 - 1
MIB_MAX = 2**20  # 1 TiB
EVENTS_MAX = 10**9  # acks or log entries before a cut
WHOLE_TEXT = re.compile(r"-?[0-9]{1,30}")  # more digits than any range: no 5000-digit int()
DECIMAL_TEXT = re.compile(r"[0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30}")  # no sign, exponent, `_`, inf or nan


def expected(low: int, high: int) -> str:
    return f"a whole number from {low} to {high}"


def shown(value, limit: int = 40) -> str:
    """A value as a message quotes it, cut short: a 5000-digit number is no one-line message."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


LONG_WORD = re.compile(r"\S{241,}")


def one_line(message: str) -> str:
    """A refusal as it is printed: every run of text without a space longer than any path a
    person types (a 20 KB `--fs` value echoed inside it) cut short, wherever it was quoted."""
    return LONG_WORD.sub(lambda m: f"{m[0][:120]}... ({len(m[0])} characters)", str(message))


def whole(text: str, low: int, high: int) -> int:
    """`text` as a whole number from `low` to `high`; a ValueError says the range."""
    if isinstance(text, str) and WHOLE_TEXT.fullmatch(text.strip()):
        number = int(text.strip())
        if low <= number <= high:
            return number
    raise ValueError(f"expected {expected(low, high)}, got {shown(text)}")


def decimal(text: str) -> float:
    """`text` as a number that may have a fraction (`0.5`, `30`), by the whole numbers' rule:
    ASCII digits and one point only (`float` would take `1_000`, `1e3`, `inf` and `٣٠`); a
    ValueError otherwise. The caller holds it to its range."""
    if isinstance(text, str) and DECIMAL_TEXT.fullmatch(text):
        return float(text)
    raise ValueError(f"expected a number such as 30 or 0.5, got {shown(text)}")


def names(text: str) -> tuple[str, ...]:
    """A comma-separated list as a user writes it, each name without the spaces around it. An
    empty name (`ext4,`, `a,,b`) is a ValueError, never dropped: a list says what to run."""
    items = tuple(item.strip() for item in text.split(","))
    if not all(items):
        raise ValueError(f"expected a comma-separated list of names, got an empty name in {shown(text)}")
    return items


def once_each(values, same=str):
    """`values`, none given twice (`same` says what makes two the same); a ValueError names
    the one given twice. Duplicates are refused, never merged: a list says what to run."""
    seen: dict = {}
    for value in values:
        key = same(value)
        if key in seen:
            also = f" (the same as {seen[key]})" if seen[key] != value else ""
            raise ValueError(f"{value} is given twice{also}")
        seen[key] = value
    return values


def checked_whole(value, low: int, high: int) -> int:
    """A value already typed (a case file's, a saved state's) held to the same rule."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"expected {expected(low, high)}, got {shown(value)}")
    return value
