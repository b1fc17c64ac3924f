"""A space's counts kept on disk between runs (`Stored`), so that an id of seq 3 is turned back
into its workload in seconds rather than after a count of the whole space (minutes: seq 3 of
the ten tables is 5.7 billion workloads).

Only the counts with two or more steps to go are kept: a few thousand a space, against the
tens of thousands with one step to go, which are cheap to count again along the one path an id
takes. A file holds one space's counts (its steps' positions) under the digest of the model's
rules, the source of this package: a change of the rules is a new file, never a stale count.
The store is an optimisation only: a file that cannot be read or written is ignored, and the
counts are made as if there were none. The files of rules no longer used go when the cache is
pruned (`plugpull kernels prune`: a file read is marked used)."""

import hashlib
import json
from functools import cache
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import atomic_write_json, read_regular
from plugpull.paths import cache_dir
from plugpull.prune import Kind, mark_used, register

RULES = Path(__file__).resolve().parent
MOST = 64 << 20  # bytes of one space's file read at most: seq 3's is under 1 MiB
KEPT_FROM = 2  # steps to go: the counts with fewer are not kept
FOLDER = "counts"


@cache
def rules_digest() -> str:
    """The digest of the model's rules: every module of this package, by name and content."""
    h = hashlib.sha256()
    for path in sorted(RULES.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def mask_text(mask) -> tuple:
    """A mask (two frozensets of names) in a form whose text is the same in every process."""
    return tuple(tuple(sorted(part)) for part in mask)


def key_text(key: tuple) -> str:
    """`Space.count`'s memo key, (the Sim's key, steps to go, mask, `again` next), as text."""
    sim_key, left, mask, again = key
    return repr((sim_key, left, mask_text(mask), again))


class Stored:
    """The kept counts of the space whose steps have `positions` (`Space.positions`), read on
    first use; `put` adds one, `save` writes the file (merged with what another process wrote
    there meanwhile) if anything was added."""

    def __init__(self, positions: tuple):
        self.name = repr(tuple(mask_text(p) for p in positions))
        self._counts: dict[str, int] | None = None
        self._added = False

    @property
    def path(self) -> Path:
        space = hashlib.sha256(self.name.encode()).hexdigest()[:16]
        return cache_dir() / FOLDER / f"{rules_digest()}-{space}.json"

    @property
    def counts(self) -> dict[str, int]:
        if self._counts is None:
            self._counts = self._read()
        return self._counts

    def get(self, key: tuple) -> int | None:
        return self.counts.get(key_text(key))

    def put(self, key: tuple, value: int) -> None:
        self.counts[key_text(key)] = value
        self._added = True

    def save(self) -> None:
        if not self._added:
            return
        self._added = False
        counts = {**self._read(), **self.counts}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.path, {"rules": rules_digest(), "space": self.name, "counts": counts}, indent=None)
        except (OSError, UsageError):
            pass

    def _read(self) -> dict[str, int]:
        try:
            doc = json.loads(read_regular(self.path, most=MOST))
        except (OSError, UsageError, ValueError):
            return {}
        if not isinstance(doc, dict) or doc.get("rules") != rules_digest() or doc.get("space") != self.name:
            return {}
        counts = doc.get("counts")
        if not isinstance(counts, dict):
            return {}
        mark_used(self.path)
        return {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


register(Kind(FOLDER))
