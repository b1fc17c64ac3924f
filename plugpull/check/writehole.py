"""The RAID5 write hole in a state's evidence: acknowledged data that was not being written.

A crash during a stripe update can leave the stripe's parity stale. That is harmless until a
member is lost: then the lost member's blocks are rebuilt from the stale parity and read back
wrong, even blocks acknowledged long before the crash and never written again. A lost ack
is such a block when its workload never writes an acknowledged operation's data again
(`Workload.write_once`) and at least `LATER` acks after it were owed too: its writes were
flushed, and flushed past again, well before the cut. Other losses are ordinary ones.
"""

from dataclasses import replace

from plugpull.check.verdict import Ack, StateVerdict
from plugpull.testbed.workloads.base import Lost

LATER = 2  # owed acks after a lost one that make it "long before the cut"
EVIDENCE = "acked long before the cut and not rewritten since: wrong"


def long_before(acks: list[Ack], required: list[int]) -> set[int]:
    """The owed acks with at least LATER owed acks read after them."""
    owed = sorted((a.stamp, a.ident) for a in acks if a.ident in set(required))
    return {ident for _, ident in owed[:max(len(owed) - LATER, 0)]}


def with_write_hole(v: StateVerdict, workload, acks: list[Ack], required: list[int]) -> StateVerdict:
    """The verdict with every lost ack that the write hole, not ordinary loss, explains
    marked so in its evidence, and counted in the reason."""
    if not v.lost or not getattr(workload, "write_once", False):
        return v
    old = long_before(acks, required)
    lost = [Lost(l.ack, f"{EVIDENCE} ({l.reason})") if l.ack in old else l for l in v.lost]
    holes = sum(l.ack in old for l in v.lost)
    if not holes:
        return v
    return replace(v, lost=lost, reason=f"{v.reason}; {holes} {EVIDENCE.replace(': wrong', '')}, read back wrong "
                                        "(the write hole)")


def write_hole_losses(lost: list) -> int:
    """How many of a result's lost acks (dicts or Lost) carry the write hole's evidence."""
    return sum(EVIDENCE in (l["reason"] if isinstance(l, dict) else l.reason) for l in lost)
