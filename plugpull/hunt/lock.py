"""A hunt's directory has one writer: `hold(out)` takes the writer lock (`plugpull.locks.hold`)
on hunt.lock for the hunt's life; a second hunt, or a report asked of a live one, is told who
holds it."""

from pathlib import Path

from plugpull import locks

LOCK = "hunt.lock"


def hold(out: Path):
    return locks.hold(out, LOCK, "hunt")
