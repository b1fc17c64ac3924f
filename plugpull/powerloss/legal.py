"""Could a real disk leave this crash state? Write-cache semantics, checked per sector.

A disk with a volatile write cache (ATA, SCSI) may have on media, at a power loss, any
subset of the writes completed since the last completed FLUSH; a write a completed flush
covered is on media, and so is a FUA write once it completed. So each sector holds the data
of the last durable write to it (or the base image's, if none), or of a later write. A
state in which a sector holds older data than its last durable write needs a disk that
lies about flushes: that is what `legality` reports.

The rule is written here on its own, from the log alone, so that the power-loss models can
be checked against it rather than against themselves.
"""

from dataclasses import dataclass
from typing import Iterable, Sequence

from plugpull.powerloss.models import Piece
from plugpull.powerloss.writelog import LogEntry


@dataclass(frozen=True)
class Legality:
    legal: bool
    reason: str

    def __str__(self) -> str:
        return f"{'legal' if self.legal else 'ILLEGAL'}: {self.reason}"


def _updates(entries: Iterable[LogEntry]):
    return [e for e in entries if e.nr_sectors > 0 and (e.is_write or e.is_discard)]


def durability(entries: Sequence[LogEntry], cut: int, lying: bool = False) -> dict[int, str]:
    """For every write or discard in entries[:cut] (by entry index): why it is durable
    ("flush N", "FUA"), or "" when it is volatile. A flush covers what completed before it;
    the data of a write that carries a PREFLUSH belongs after its flush. `lying`: a disk
    that ignores flushes and FUA, on which nothing is durable."""
    issued = list(entries[:cut])
    covering: dict[int, int] = {}
    pending: list[int] = []
    for e in issued:
        if e.is_flush:
            covering.update((i, e.index) for i in pending)
            pending = []
        if e.nr_sectors > 0 and (e.is_write or e.is_discard):
            pending.append(e.index)
    why = {}
    for e in _updates(issued):
        if lying:
            why[e.index] = ""
        elif e.index in covering:
            why[e.index] = f"flush {covering[e.index]}"
        else:
            why[e.index] = "FUA" if e.is_fua else ""
    return why


def volatile(entries: Sequence[LogEntry], cut: int, lying: bool = False) -> list[int]:
    """The entries a power loss after entries[:cut] may keep or drop: the volatile set."""
    return [i for i, why in durability(entries, cut, lying).items() if not why]


def _last_durable(entries: Sequence[LogEntry], why: dict[int, str]) -> dict[int, int]:
    """sector -> entry index of the last durable write or discard to it."""
    last: dict[int, int] = {}
    for e in entries:
        if why.get(e.index):
            for s in range(e.sector, e.sector + e.nr_sectors):
                last[s] = e.index
    return last


def _final(pieces: Iterable[Piece]) -> dict[int, int]:
    """sector -> entry index whose data the state holds there (pieces apply in order)."""
    final: dict[int, int] = {}
    for p in pieces:
        for s in range(p.first_sector, p.first_sector + p.nr_sectors):
            final[s] = p.entry_index
    return final


def legality(entries: Sequence[LogEntry], cut: int, pieces: Sequence[Piece]) -> Legality:
    """Whether a disk with a write cache that honours FLUSH and FUA could have left the state
    base image + `pieces` when power went after entries[:cut]."""
    issued = list(entries[:cut])
    known = {e.index for e in _updates(issued)}
    late = sorted({p.entry_index for p in pieces} - known)
    if late:
        return Legality(False, f"entry {late[0]} persists but was not issued before the cut")
    why = durability(issued, cut)
    final = _final(pieces)
    for sector, durable in sorted(_last_durable(issued, why).items()):
        holds = final.get(sector)
        if holds is None or holds < durable:
            found = "the base image's data" if holds is None else f"entry {holds}'s older data"
            return Legality(False, f"sector {sector} holds {found}, but entry {durable} had reached the "
                                   f"media ({why[durable]}): it needs a disk that loses a write a completed "
                                   "flush covered")
    kept = len({p.entry_index for p in pieces if not why[p.entry_index]})
    return Legality(True, f"every flushed or FUA write is on media; {kept} of "
                          f"{sum(1 for w in why.values() if not w)} volatile writes persist, which a write "
                          "cache may do")
