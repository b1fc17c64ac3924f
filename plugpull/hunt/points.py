"""Which crash states a hunt checks of each workload: those around its persistence points.

A persistence point's writes reach the disk in the epoch that its flush ends. So the cuts are:
where each ack arrived (the point complete, all it owes is there), just before each flush (the
epoch's writes issued, none of them forced out) and the log's end. Each cut is taken as a
prefix, and under `reorder` (any subset of the open epoch persists) and `drop-unflushed`
(none of it does). With no flushes in the log (nobarrier), the whole log is one epoch and the
acks' cuts are where the unforced writes show. Cuts whose states persist the same pieces are
one state, checked once (`plan_states`).

No cut falls before ack 0: the setup (the names the operations need, then `sync`) is the
workload's starting point, as a snapshot after setup is in CrashMonkey. States inside it
would check the same mkfs and setup again for every workload.
"""

from plugpull.crash.judge import StateJob
from plugpull.crash.record import Record

MODELS = ("prefix", "reorder", "drop-unflushed")
CUTS = "acks, flushes and the log's end, from ack 0 on"  # the rule of point_cuts, in a hunt's settings


def point_cuts(rec: Record, entries) -> list[int]:
    acks = {a.position for a in rec.acks}
    flushes = {i for i, e in enumerate(entries) if e.is_flush}
    start = min(acks, default=0)
    return sorted(c for c in acks | flushes | {len(entries)} if c >= start)


def point_jobs(rec: Record, entries, models=MODELS) -> list[StateJob]:
    return [StateJob(model, cut) for model in models for cut in point_cuts(rec, entries)]
