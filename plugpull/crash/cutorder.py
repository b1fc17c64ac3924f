"""Which cuts a run checks when it has a budget, or checks them all.

    order = spending_order(range(len(entries) + 1), entries, rec.acks, seed)
    jobs = within_budget(rec, entries, candidates(models, order), budget, seed)

A budget counts distinct states (cuts whose plans persist the same pieces share one). It is
spent first where crash bugs cluster (CrashMonkey's finding): the kill point, then the cuts
just before and just after each flush and each ack, then the other cuts at random. Everything
is seeded, so the same record, seed and budget check the same states.
"""

from collections.abc import Callable, Sequence

from plugpull.crash.judge import StateJob, disk_plans, plan_key
from plugpull.crash.record import Record
from plugpull.errors import UsageError
from plugpull.rng import stable_rng
from plugpull.powerloss.writelog import iter_entries

# Cuts x models that --exhaustive checks without a budget: about ten minutes of checking
# under TCG at today's rates, before distinct states are counted.
EXHAUSTIVE_MAX = 2000


def near_events(entries, acks) -> list[tuple[int, int]]:
    """(just before, just after) each flush and each ack, as cuts: a cut c keeps entries[:c],
    so a flush at position p lies between cuts p and p + 1, and an ack stamped at position p
    is first owed by cut p."""
    flushes = [(p, p + 1) for p, e in enumerate(entries) if e.is_flush]
    owed = [(a.position - 1, a.position) for a in acks]
    return flushes + owed


def spending_order(pool: Sequence, entries, acks, seed: int, first: Callable = lambda cut: cut) -> list:
    """The cuts of `pool` in the order a budget spends them: the last (the kill point), the
    cuts next to a flush or an ack (the events in seeded random order, each event's two cuts
    together), then the rest in seeded random order. `first`: a pool item's cut in the main
    log (a cut tuple's first cut)."""
    pool = list(pool)
    if not pool:
        return []
    by_cut: dict[int, list] = {}
    for item in pool[:-1]:
        by_cut.setdefault(first(item), []).append(item)
    events = near_events(entries, acks)
    stable_rng(seed, "budget-events", len(pool)).shuffle(events)
    ordered = [pool[-1]]
    for pair in events:
        for cut in pair:
            ordered.extend(by_cut.pop(cut, []))
    rest = [item for items in by_cut.values() for item in items]
    stable_rng(seed, "budget-rest", len(pool)).shuffle(rest)
    return ordered + rest


def candidates(models, order: Sequence) -> list[StateJob]:
    """Every model at each cut in turn, so that a budget is shared between the models."""
    return [StateJob(str(model), *((cut[0], tuple(cut[1:])) if isinstance(cut, tuple) else (cut,)))
            for cut in order for model in models]


def within_budget(rec: Record, entries, jobs: Sequence[StateJob], budget: int, seed: int) -> list[StateJob]:
    """The leading jobs that need at most `budget` distinct states: a job whose state is
    already in is free, and the walk stops at the first that would need one more."""
    every_entries = [entries] + [list(iter_entries(log)) for log in rec.logs[1:]]
    seen: set[bytes] = set()
    kept = []
    for job in jobs:
        key = plan_key(*disk_plans(every_entries, job, seed))
        if key not in seen:
            if len(seen) == budget:
                break
            seen.add(key)
        kept.append(job)
    return kept


def refuse_too_big(cuts: int, models: int) -> None:
    """--exhaustive without a budget on a log too big to check every cut of."""
    if cuts * models > EXHAUSTIVE_MAX:
        raise UsageError(f"--exhaustive: the log has {cuts} cuts, {cuts * models} states under {models} "
                         f"model(s), more than {EXHAUSTIVE_MAX} without a budget: add --budget N")
