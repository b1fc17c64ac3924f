"""Power-loss models: which logged writes survive a power cut.

A crash state is the base image plus the writes a model lets persist up to a cut point
(chosen in `cuts`).
`cut` is an entry count: entries[:cut] were issued when power was lost. A plan is the
list of pieces to apply, in order; later pieces overwrite earlier ones.

Durability rules shared by the models: FLUSH entries split the log into epochs, a write
before a completed flush is durable, and a FUA write is durable once it completes. The
`lying` modifier makes a device that acknowledges flushes and FUA but ignores them.
Which flush covers a write is read from log order, which is completion order; it equals
issue order at every flush on the ATA disks plugpull records (measured: flushorder, and
docs/flush-order.md's bound).

Entries are metadata only (LogEntry); plans never look at the data. Pieces name entries
by `LogEntry.index`, so a caller may pass a filtered list; positions in that list are
what `cut` counts.

Randomness comes from random.Random seeded by a SHA-256 of (seed, cut, model), so a plan
is the same on every run and every machine.
"""

from __future__ import annotations

import bisect
import heapq
import random
from dataclasses import dataclass
from typing import Sequence

from plugpull.powerloss.writelog import LogEntry
from plugpull.rng import stable_rng
from plugpull.values import MIB_MAX, shown, whole

MODEL_NAMES = ("prefix", "drop-unflushed", "reorder", "cache", "torn")
DESTAGE_POLICIES = ("fifo", "elevator", "random")
LYING = "lying"
SECTORS_PER_MIB = 2048


@dataclass(frozen=True)
class Piece:
    """A run of sectors of one logged write (or discard, applied as zeros) that persists."""

    entry_index: int
    first_sector: int
    nr_sectors: int


@dataclass(frozen=True)
class ModelSpec:
    name: str
    lying: bool = False
    cache_mib: int = 8
    destage: str = "fifo"

    def __post_init__(self):
        if self.name not in MODEL_NAMES:
            raise ValueError(f"unknown power-loss model {self.name!r}; "
                             f"known models: {', '.join(MODEL_NAMES)}")
        if self.destage not in DESTAGE_POLICIES:
            raise ValueError(f"unknown destage policy {self.destage!r}; "
                             f"known policies: {', '.join(DESTAGE_POLICIES)}")
        if isinstance(self.cache_mib, bool) or not isinstance(self.cache_mib, int) or self.cache_mib < 0:
            raise ValueError(f"cache size must be a whole number of MiB >= 0, not {self.cache_mib!r}")
        if self.name != "cache" and (self.cache_mib, self.destage) != (8, "fifo"):
            raise ValueError(f"cache size and destage policy only apply to the cache model, not {self.name!r}")

    def __str__(self) -> str:
        text = f"cache:{self.cache_mib}:{self.destage}" if self.name == "cache" else self.name
        return f"{text}+{LYING}" if self.lying else text


def parse_model(text: str, smallest_cache: int = 0) -> ModelSpec:
    """Parse `name[+lying]`, where the cache model is `cache[:MiB[:fifo|elevator|random]]`.

    Examples: "prefix", "drop-unflushed+lying", "cache:16:elevator+lying".
    """
    head, *modifiers = text.strip().split("+")
    lying = False
    for modifier in modifiers:
        if modifier != LYING:
            raise ValueError(f"unknown model modifier {modifier!r} in {text!r}; the only modifier is '+{LYING}'")
        if lying:
            raise ValueError(f"'+{LYING}' given twice in {text!r}")
        lying = True
    name, *args = head.split(":")
    if name not in MODEL_NAMES:
        raise ValueError(f"unknown power-loss model {name!r} in {text!r}; known models: {', '.join(MODEL_NAMES)}")
    if name != "cache":
        if args:
            raise ValueError(f"model {name!r} takes no parameters: {text!r}")
        return ModelSpec(name, lying)
    if len(args) > 2:
        raise ValueError(f"too many parameters in {text!r}; expected cache[:MiB[:policy]]")
    size = args[0] if args else "8"
    try:
        mib = whole(size, smallest_cache, MIB_MAX)
    except ValueError as e:
        raise ValueError(f"cache size in {shown(text)} (MiB): {e}") from None
    return ModelSpec(name, lying, mib, args[1] if len(args) > 1 else "fifo")


def parse_user_model(text: str) -> ModelSpec:
    """A model as a user names one: `parse_model`, and no cache of 0 MiB (it holds nothing
    back: every write persists in order, which `prefix` says plainly)."""
    return parse_model(text, smallest_cache=1)


def _is_update(e: LogEntry) -> bool:
    return e.nr_sectors > 0 and (e.is_write or e.is_discard)


def _whole(e: LogEntry) -> Piece:
    return Piece(e.index, e.sector, e.nr_sectors)


def _boundary(issued: Sequence[LogEntry], lying: bool) -> int:
    """Position of the last flush that counts; updates before it are durable (-1: none)."""
    if lying:
        return -1
    for pos in range(len(issued) - 1, -1, -1):
        if issued[pos].is_flush:
            return pos
    return -1


def _plan_prefix(issued, spec, rng) -> list[Piece]:
    return [_whole(e) for e in issued if _is_update(e)]


def _durable_and_volatile(issued, spec):
    """Split updates into durable ones (flushed, or honoured FUA) and the cut epoch's rest.

    An entry that is both a flush and a write (a dm-log-writes PREFLUSH write) flushes
    what came before it; its own data belongs to the epoch it opens.
    """
    boundary = _boundary(issued, spec.lying)
    for pos, e in enumerate(issued):
        if _is_update(e):
            durable = pos < boundary or (e.is_fua and not spec.lying)
            yield e, durable


def _plan_drop_unflushed(issued, spec, rng) -> list[Piece]:
    return [_whole(e) for e, durable in _durable_and_volatile(issued, spec) if durable]


def _plan_reorder(issued, spec, rng) -> list[Piece]:
    """Surviving writes are applied in log order: a disk never puts older data over newer."""
    return [_whole(e) for e, durable in _durable_and_volatile(issued, spec)
            if durable or rng.random() < 0.5]


def _plan_torn(issued, spec, rng) -> list[Piece]:
    """Like reorder; a surviving multi-sector write keeps each 512-byte sector by a coin toss.

    Discards are kept or dropped whole.
    """
    pieces = []
    for e, durable in _durable_and_volatile(issued, spec):
        if durable:
            pieces.append(_whole(e))
        elif rng.random() < 0.5:
            if e.is_write and e.nr_sectors > 1:
                pieces.extend(_runs(e, rng.getrandbits(e.nr_sectors)))
            else:
                pieces.append(_whole(e))
    return pieces


def _runs(e: LogEntry, kept_bits: int) -> list[Piece]:
    """Pieces for the sectors of e whose bit is set (bit i is sector e.sector + i)."""
    pieces = []
    i = 0
    while kept_bits:
        if kept_bits & 1:
            length = (~kept_bits & (kept_bits + 1)).bit_length() - 1
            pieces.append(Piece(e.index, e.sector + i, length))
            kept_bits >>= length
            i += length
        else:
            skip = (kept_bits & -kept_bits).bit_length() - 1
            kept_bits >>= skip
            i += skip
    return pieces


@dataclass(frozen=True)
class _Extent:
    start: int
    end: int
    entry_index: int
    seq: int
    discard: bool

    @property
    def weight(self) -> int:
        """Sectors of cache it takes; a discard carries no data, so it counts as one."""
        return 1 if self.discard else self.end - self.start


class _WriteCache:
    """A volatile write cache that keeps only the newest data for each sector.

    A write entering the cache supersedes the cached parts of older writes it overlaps,
    so cached extents never overlap and any destage order leaves newest data on disk.
    """

    def __init__(self, capacity_sectors: int, policy: str, rng: random.Random):
        self.capacity = capacity_sectors
        self.policy = policy
        self.rng = rng
        self.starts: list[int] = []
        self.extents: dict[int, _Extent] = {}
        self.fifo: list[tuple[int, int]] = []
        self.used = 0
        self.head = 0
        self.persisted: list[Piece] = []

    def _add(self, extent: _Extent) -> None:
        bisect.insort(self.starts, extent.start)
        self.extents[extent.start] = extent
        self.used += extent.weight
        if self.policy == "fifo":
            heapq.heappush(self.fifo, (extent.seq, extent.start))

    def _remove(self, start: int) -> _Extent:
        del self.starts[bisect.bisect_left(self.starts, start)]
        extent = self.extents.pop(start)
        self.used -= extent.weight
        return extent

    def _supersede(self, start: int, end: int) -> None:
        """Drop the cached data of [start, end): something newer now owns those sectors."""
        i = max(bisect.bisect_right(self.starts, start) - 1, 0)
        hit = []
        while i < len(self.starts) and self.starts[i] < end:
            if self.extents[self.starts[i]].end > start:
                hit.append(self.starts[i])
            i += 1
        for s in hit:
            old = self._remove(s)
            if old.start < start:
                self._add(_Extent(old.start, start, old.entry_index, old.seq, old.discard))
            if old.end > end:
                self._add(_Extent(end, old.end, old.entry_index, old.seq, old.discard))

    def insert(self, e: LogEntry, seq: int) -> None:
        end = e.sector + e.nr_sectors
        self._supersede(e.sector, end)
        self._add(_Extent(e.sector, end, e.index, seq, e.is_discard))
        while self.used > self.capacity:
            self._destage_one()

    def write_through(self, e: LogEntry) -> None:
        self._supersede(e.sector, e.sector + e.nr_sectors)
        self.persisted.append(_whole(e))

    def drain(self) -> None:
        while self.starts:
            self._destage_one()

    def _pick(self) -> int:
        if self.policy == "fifo":
            while True:
                seq, start = heapq.heappop(self.fifo)
                extent = self.extents.get(start)
                if extent is not None and extent.seq == seq:
                    return start
        if self.policy == "elevator":
            i = bisect.bisect_left(self.starts, self.head)
            return self.starts[i if i < len(self.starts) else 0]
        return self.starts[self.rng.randrange(len(self.starts))]

    def _destage_one(self) -> None:
        extent = self._remove(self._pick())
        self.head = extent.end
        self.persisted.append(Piece(extent.entry_index, extent.start, extent.end - extent.start))


def _plan_cache(issued, spec, rng) -> list[Piece]:
    """A cache of cache_mib MiB that destages by policy when over capacity.

    A flush drains it, FUA bypasses it; with `lying` neither happens. Whatever is still
    cached at the cut is lost. Discards pass through the cache taking one sector of room each.
    """
    cache = _WriteCache(spec.cache_mib * SECTORS_PER_MIB, spec.destage, rng)
    for pos, e in enumerate(issued):
        if e.is_flush and not spec.lying:
            cache.drain()
        if not _is_update(e):
            continue
        if e.is_fua and not spec.lying:
            cache.write_through(e)
        else:
            cache.insert(e, pos)
    return cache.persisted


PLANNERS = {
    "prefix": _plan_prefix,
    "drop-unflushed": _plan_drop_unflushed,
    "reorder": _plan_reorder,
    "cache": _plan_cache,
    "torn": _plan_torn,
}


def plan(entries: Sequence[LogEntry], cut: int, model: ModelSpec | str, seed: int) -> list[Piece]:
    """The pieces that persist when power is lost after entries[:cut], in apply order."""
    spec = model if isinstance(model, ModelSpec) else parse_model(model)
    if not 0 <= cut <= len(entries):
        raise ValueError(f"cut {cut} is outside 0..{len(entries)}")
    rng = stable_rng(seed, cut, spec)
    return PLANNERS[spec.name](entries[:cut], spec, rng)
