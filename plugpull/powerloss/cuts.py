"""Where power is cut: every choice of cut points a crash run or a hunt makes.

A cut c keeps entries[:c] of a write log: c writes were issued when power was lost. Each
chooser below gives cuts in a log; a model then decides which of the issued writes persist
(`models.plan`). Whatever is random is drawn from `stable_rng`, seeded by the run's seed and
what the draw is for, so that the same log and seed give the same cuts on every machine.

    cut_points(entries, "flushes,random:5", seed)  # --cuts: cuts named by a spec
    state_cuts(entries, 30, seed)                   # --states: N seeded cuts and the kill point
    pair_cuts(consistent, 30, seed)                 # the same, for two or more recorded disks
    spending_order(pool, entries, acks, seed)       # --budget: which cuts a budget spends first
    point_cuts(entries, acks)                       # a hunt: the cuts around each persistence point
"""

from collections.abc import Callable, Sequence

from plugpull.errors import UsageError
from plugpull.powerloss.writelog import LogEntry
from plugpull.rng import stable_rng
from plugpull.values import COUNT_MAX, shown, whole

# Cuts x models that --exhaustive checks without a budget: about ten minutes of checking
# under TCG at today's rates, before distinct states are counted.
EXHAUSTIVE_MAX = 2000
POINT_CUTS = "acks, flushes and the log's end, from ack 0 on"  # the rule of point_cuts, in a hunt's settings


def _positive(arg: str, part: str) -> int:
    try:
        return whole(arg, 1, COUNT_MAX)
    except ValueError as e:
        raise ValueError(f"{shown(part)}: after ':' {e}") from None


def cut_points(entries: Sequence[LogEntry], spec: str, seed: int) -> list[int]:
    """Cut points named by spec, sorted and without repeats.

    "flushes": just after each flush entry; "every:N": after every Nth write; "random:N":
    N distinct cuts in 1..len(entries) (all of them if fewer); "end": len(entries), the
    live kill point. A comma-separated list is the union.
    """
    cuts: set[int] = set()
    for part in (p.strip() for p in spec.split(",")):
        kind, colon, arg = part.partition(":")
        if kind == "flushes" and not colon:
            cuts.update(pos + 1 for pos, e in enumerate(entries) if e.is_flush)
        elif kind == "end" and not colon:
            cuts.add(len(entries))
        elif kind == "every" and colon:
            n = _positive(arg, part)
            writes = 0
            for pos, e in enumerate(entries):
                if e.is_write:
                    writes += 1
                    if writes % n == 0:
                        cuts.add(pos + 1)
        elif kind == "random" and colon:
            n = _positive(arg, part)
            candidates = range(1, len(entries) + 1)
            cuts.update(stable_rng(seed, part).sample(candidates, min(n, len(candidates))))
        else:
            raise ValueError(f"bad cut spec {part!r} in {spec!r}; expected flushes, every:N, random:N or end")
    return sorted(cuts)


def state_cuts(entries, n: int, seed: int) -> list[int]:
    """N distinct cut points (fewer if the log is shorter): the live kill point, the end of
    the log, and N-1 others drawn without replacement, seeded."""
    end = len(entries)
    others = stable_rng(seed, "cuts", end).sample(range(end), min(n - 1, end))
    return sorted({end, *others})


def pair_cuts(pairs: list, n: int, seed: int) -> list[tuple[int, ...]]:
    """N of the consistent cuts sampled across the disks' logs, always with the last."""
    pairs = [tuple(p) for p in pairs]
    others = stable_rng(seed, "pair-cuts", len(pairs)).sample(pairs[:-1], min(n - 1, len(pairs) - 1))
    return sorted({pairs[-1], *others})


def near_events(entries, acks) -> list[tuple[int, int]]:
    """(just before, just after) each flush and each ack, as cuts: a flush at position p lies
    between cuts p and p + 1, and an ack stamped at position p is first owed by cut p."""
    flushes = [(p, p + 1) for p, e in enumerate(entries) if e.is_flush]
    owed = [(a.position - 1, a.position) for a in acks]
    return flushes + owed


def spending_order(pool: Sequence, entries, acks, seed: int, first: Callable = lambda cut: cut) -> list:
    """The cuts of `pool` in the order a budget spends them, where crash bugs cluster first
    (CrashMonkey's finding): the last (the kill point), the cuts next to a flush or an ack
    (the events in seeded random order, each event's two cuts together), then the rest in
    seeded random order. `first`: a pool item's cut in the main log (a cut tuple's first cut)."""
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


def refuse_too_big(cuts: int, models: int) -> None:
    """--exhaustive without a budget on a log too big to check every cut of."""
    if cuts * models > EXHAUSTIVE_MAX:
        raise UsageError(f"--exhaustive: the log has {cuts} cuts, {cuts * models} states under {models} "
                         f"model(s), more than {EXHAUSTIVE_MAX} without a budget: add --budget N")


def point_cuts(entries, acks) -> list[int]:
    """A hunt's cuts: those around each persistence point (`POINT_CUTS`).

    A persistence point's writes reach the disk in the epoch that its flush ends. So the cuts
    are where each ack arrived (the point complete, all it owes is there), just before each
    flush (the epoch's writes issued, none of them forced out) and the log's end. With no
    flushes in the log (nobarrier), the whole log is one epoch and the acks' cuts are where
    the unforced writes show.

    No cut falls before ack 0: the setup (the names the operations need, then `sync`) is the
    workload's starting point, as a snapshot after setup is in CrashMonkey. States inside it
    would check the same mkfs and setup again for every workload.
    """
    positions = {a.position for a in acks}
    flushes = {i for i, e in enumerate(entries) if e.is_flush}
    start = min(positions, default=0)
    return sorted(c for c in positions | flushes | {len(entries)} if c >= start)
