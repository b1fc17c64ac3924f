"""The states between a failing crash state and a clean reference: what minimisation varies.

A state is the base image, every durable write, and some of the volatile ones (the writes
its model was free to keep or drop). A candidate starts from a reference state, in which no
volatile write persists (drop-unflushed) or every one does, whole (prefix), and holds some
volatile writes as the failing state does: dropped, kept, or in part (a torn write). Pieces
apply in log order, which is the order a disk that never puts older data over newer leaves.

    var = variation(entries, cut, "cache:32:random", seed)
    var.pieces("prefix", var.changes("prefix"))   # the failing state again
    var.pieces("prefix", ())                      # every volatile write persisted
    var.pieces("drop-unflushed", ())              # none did
"""

import hashlib
from dataclasses import dataclass
from typing import Iterable, Sequence

from plugpull.powerloss.legal import durability
from plugpull.powerloss.models import Piece, parse_model, plan
from plugpull.powerloss.writelog import LogEntry


REFERENCES = ("drop-unflushed", "prefix")  # no volatile write kept, or every one whole


@dataclass(frozen=True)
class Variation:
    durable: tuple[int, ...]
    volatile: tuple[int, ...]
    failing: dict[int, tuple[Piece, ...]]  # the failing plan's pieces of each volatile write it keeps
    updates: dict[int, LogEntry]

    def _whole(self, index: int) -> tuple[Piece, ...]:
        e = self.updates[index]
        return (Piece(index, e.sector, e.nr_sectors),)

    def changes(self, reference: str) -> tuple[int, ...]:
        """The volatile writes the failing state holds otherwise than `reference` does."""
        if reference == "drop-unflushed":
            return tuple(i for i in self.volatile if i in self.failing)
        return tuple(i for i in self.volatile if self.failing.get(i) != self._whole(i))

    def pieces(self, reference: str, changed: Iterable[int]) -> list[Piece]:
        """The plan of `reference` with the volatile writes `changed` as the failing state
        holds them (dropped, kept, or in part)."""
        if reference not in REFERENCES:
            raise ValueError(f"unknown reference {reference!r}")
        changed = set(changed)
        stray = changed - set(self.volatile)
        if stray:
            raise ValueError(f"entries {sorted(stray)[:5]} are not volatile writes of this state")
        kept = {} if reference == "drop-unflushed" else {i: self._whole(i) for i in self.volatile}
        kept.update((i, self.failing.get(i, ())) for i in changed)
        kept.update((i, self._whole(i)) for i in self.durable)
        return [p for i in sorted(kept) for p in kept[i]]


def variation(entries: Sequence[LogEntry], cut: int, model: str, seed: int) -> Variation:
    """How the state (model, cut, seed) can be varied."""
    why = durability(entries, cut, parse_model(model).lying)
    volatile = tuple(i for i, w in why.items() if not w)
    failing: dict[int, list[Piece]] = {}
    for p in plan(entries, cut, model, seed):
        if not why[p.entry_index]:
            failing.setdefault(p.entry_index, []).append(p)
    return Variation(
        durable=tuple(i for i, w in why.items() if w), volatile=volatile,
        failing={i: tuple(ps) for i, ps in failing.items()},
        updates={e.index: e for e in entries[:cut] if e.index in why},
    )


def plan_key(pieces: Sequence[Piece]) -> str:
    """What names a plan in the cache of judged ones."""
    text = ";".join(f"{p.entry_index}:{p.first_sector}+{p.nr_sectors}" for p in pieces)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


Change = tuple[int, int]  # a volatile write: its disk (in the record's order), its entry in that disk's log


@dataclass(frozen=True)
class Disks:
    """The variation of a state on every disk it was cut on (one, or a stack's members, or
    extlog's data and log disks): each disk's own, at its own cut. A change names its disk,
    so the volatile set spans every disk's log."""

    each: tuple[Variation, ...]

    @property
    def volatile(self) -> tuple[Change, ...]:
        return tuple((d, i) for d, var in enumerate(self.each) for i in var.volatile)

    def changes(self, reference: str) -> tuple[Change, ...]:
        return tuple((d, i) for d, var in enumerate(self.each) for i in var.changes(reference))

    def pieces(self, reference: str, changed: Iterable[Change]) -> tuple[list[Piece], ...]:
        """Each disk's plan: `reference` with the changes on that disk as the failing state."""
        changed = tuple(changed)
        return tuple(var.pieces(reference, [i for on, i in changed if on == d]) for d, var in enumerate(self.each))


def disks_variation(every_entries: Sequence[Sequence[LogEntry]], cuts: Sequence[int], model: str,
                    seed: int) -> Disks:
    """How the state cut at `cuts` (one per disk) can be varied, the model applied to each
    disk's log as the run did."""
    return Disks(tuple(variation(entries, cut, model, seed) for entries, cut in zip(every_entries, cuts)))


def plans_key(plans: Sequence[Sequence[Piece]]) -> str:
    """What names a state on several disks in the cache of judged ones (on one disk, its
    plan's plan_key, as before there were several)."""
    return "|".join(plan_key(pieces) for pieces in plans)
