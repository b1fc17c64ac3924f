"""The space of generated workloads: every sequence of `seq` core operations from the table,
each followed by a persistence point or not (the last always by one), that is valid on the
simulated tree. Workloads are numbered in depth-first order (the table's order at each step,
then the persistence choices' order), and the number is the id: `seq2-000412`. Those made of
the first table's steps come first and keep the numbers they had before later operations were
added, then those of each later table in turn (`Space`); `seq2u-000412` is the same workload
with a setup that is not synced, `seq2l-000412` with a synced setup that gives A/foo thousands
of links, `seq2x-`, `seq2q-`, `seq2f-` the other synced setups with more or other (`setups`).
A shape (`shapes`) is a space of its own of four to six operations, each step's families and
points fixed by its position, numbered alike:
`seq5.renames-000042`, `seq5u.renames-000042`.

Nothing is listed to be counted: the number of valid continuations depends only on the
simulated tree's shape (`Sim.key`), so counts are memoised on it, and an id is turned back into
its workload (or a sample drawn) by walking down the counts."""

import random
import re
from functools import cache

from plugpull.errors import UsageError
from plugpull.generate.counts import KEPT_FROM, Stored
from plugpull.generate.names import NESTED_FAMILIES
from plugpull.generate.fourth import FAMILY as FOURTH_NAME
from plugpull.generate.ops import FAMILIES, OPS, PERSISTENCE, SHAPE_FAMILIES, SIZED, TABLES, Op, \
    Persist, Sim, apply, up_to
from plugpull.generate.points import followed, last_points
from plugpull.generate.setups import EXTRAS, MARKS, setup_kind
from plugpull.generate.shapes import NO_POINT, Shape, allows, shape_named
from plugpull.generate.steps import Step, Workload, ordered_setup, steps_of, workload_id
from plugpull.values import shown

SEQS = (1, 2, 3)
SETUPS = tuple(MARKS)
# no id of thousands of digits reaches int(); a shape's name after the seq: seq5.renames-000042
_ID = re.compile(r"seq([0-9]{1,2})([ulxqf]?)(?:\.([a-z]{1,20}(?:-[a-z]{1,20}){0,3}))?-([0-9]{1,12})")
ID_FORMS = "seqN-NNNNNN, seqNu-, seqNl-, seqNx-, seqNq-, seqNf-NNNNNN or seqN.SHAPE-NNNNNN"


Mask = tuple[frozenset, frozenset]  # (operation families, persistence points) a walk may take
WHOLE: Mask = (frozenset(FAMILIES), frozenset(PERSISTENCE))
# a step of a space without a shape: any operation but the shapes' own, any point or none
OPEN: Mask = (frozenset(FAMILIES) - frozenset(SHAPE_FAMILIES), frozenset(PERSISTENCE) | {NO_POINT})
# the steps of the first table, of the first two, ...: each id block's (the last is WHOLE)
GROWN: tuple[Mask, ...] = tuple((frozenset(f), frozenset(p)) for f, p in map(up_to, range(1, len(TABLES) + 1)))
FIRST: Mask = GROWN[0]
THIRD_FAMILIES = ("third", FOURTH_NAME)  # those that make the third or the fourth names (`Sim.key`)


def allowed_by(mask: Mask, op: Op, persist: Persist | None) -> bool:
    return op.family in mask[0] and (persist is None or persist.kind in mask[1])


def meet(a: Mask, b: Mask) -> Mask:
    return a[0] & b[0], a[1] & b[1]


def still_below(below: Mask | None, op: Op, persist: Persist | None) -> Mask | None:
    """`below` after a step: None once a step outside it was taken (nothing left to skip)."""
    return below if below is not None and allowed_by(below, op, persist) else None


def block_of(steps) -> int:
    """The first table (0-based) whose tables up to it have every one of `steps`."""
    return next(i for i, mask in enumerate(GROWN) if all(allowed_by(mask, s.op, s.persist) for s in steps))


# Counts by the steps' positions (a seq's, or a shape's), shared by every Space of them in the
# process: a count depends on them, the Sim and the mask (in its key), not on the filter or the
# setup, and a seq-3 walk of the ten tables costs tens of seconds. Those with two steps or more
# to go are kept on disk too (`counts.Stored`), unless the rules were changed in the process.
_COUNTS: dict[tuple, dict] = {}
_STORED: dict[tuple, Stored] = {}
_KEEP = {"on": True}


class Space:
    """The workloads of `seq` operations, optionally only those whose operations are all of
    `families` and whose persistence points are all of `persistence` (ids stay those of the
    whole space); `synced`: the setup ends with sync (ack 0), else not (ids `seqNu-...`); `extra`:
    a synced setup with more (`setups.EXTRAS`; ids `seqNl-...`, ...: the same workloads).

    Ids come in blocks, one for each table (`TABLES`): first the workloads made only of the
    first table's steps, in the order of a walk of that table (the ids they always had); then
    those made of the first two tables' steps with one of the second's, in the order of a walk
    of those tables; and so on. A walk of block i skips the workloads all of whose steps are
    in `below`, the tables before i (None: skips nothing, or no such step is still to come).

    `shape` (`shapes.Shape`): each step only of what its position allows; `seq` is then the
    shape's length, and ids name the shape (`seq5.renames-000042`)."""

    def __init__(self, seq: int, families=FAMILIES, persistence=PERSISTENCE, synced: bool = True,
                 shape: Shape | None = None, extra: str = ""):
        if shape is None and seq not in SEQS:
            raise UsageError(f"bad --seq {seq!r}: expected one of {', '.join(map(str, SEQS))}")
        if shape is not None and seq != len(shape.positions):
            raise UsageError(f"shape {shape.name} has {len(shape.positions)} operations, not {seq}")
        self.seq = seq
        self.synced = synced or bool(extra)
        self.extra = extra
        self.shape = shape.name if shape else ""
        self.positions: tuple[Mask, ...] = shape.positions if shape else (OPEN,) * seq
        self.mask: Mask = (frozenset(checked(families, FAMILIES, "operation")),
                           frozenset(checked(persistence, PERSISTENCE, "persistence point")))
        self.filtered = self.mask != WHOLE
        self._memo = _COUNTS.setdefault(self.positions, {})
        self._stored = _STORED.setdefault(self.positions, Stored(self.positions)) if _KEEP["on"] else None
        self._traits: dict[tuple[Mask, int], tuple[bool, bool, bool]] = {}

    def allowed(self, op: Op, persist: Persist | None) -> bool:
        return allowed_by(self.mask, op, persist)

    def choices(self, sim: Sim, left: int, families: frozenset = frozenset(FAMILIES)):
        """(op, persistence point, the Sim after them) for every valid next step whose operation
        is of `families` and that its position allows, in order."""
        step = self.seq - left + 1
        position = self.positions[step - 1]
        for op in OPS:
            if op.family not in families or op.family not in position[0]:
                continue
            after = sim.copy()
            if apply(after, op, step):
                for persist, then in followed(after, op, last=left == 1):
                    if allows(position, op, persist):
                        yield op, persist, then

    def traits(self, mask: Mask, left: int) -> tuple[bool, bool, bool, bool]:
        """What the Sim's key must tell apart with `left` steps to go under `mask`: whether a
        sized operation may still come, whether a nested one or one of the third or fourth name
        may come or came (its names are then points a later step may have: `Sim.key`), and whether
        `again` may come next."""
        if (mask, left) not in self._traits:
            ahead = frozenset().union(*(p[0] for p in self.positions[self.seq - left:])) & mask[0]
            ever = frozenset().union(*(p[0] for p in self.positions)) & mask[0]
            again = "again" in mask[0] & self.positions[self.seq - left][0]
            self._traits[mask, left] = (not ahead.isdisjoint(SIZED), not ever.isdisjoint(NESTED_FAMILIES),
                                        not ever.isdisjoint(THIRD_FAMILIES), again)
        return self._traits[mask, left]

    def count(self, sim: Sim | None = None, left: int | None = None, mask: Mask = WHOLE) -> int:
        """The workloads from `sim` with `left` operations to go (by default: all of them)
        whose steps are all of `mask`."""
        sim = Sim() if sim is None else sim
        left = self.seq if left is None else left
        if left == 0:
            return 1
        sized, nested, third, again = self.traits(mask, left)
        key = (sim.key(sized, nested, third), left, mask, again and sim.pointed)  # whether `again` may come next
        if key not in self._memo:
            self._memo[key] = self._last(sim, mask) if left == 1 else self._counted(sim, left, mask, key)
            if left == self.seq and self._stored:
                self._stored.save()
        return self._memo[key]

    def _counted(self, sim: Sim, left: int, mask: Mask, key: tuple) -> int:
        """`count` with `left` steps to go, from the disk's counts if they have it."""
        kept = left >= KEPT_FROM and self._stored is not None
        found = self._stored.get(key) if kept else None
        if found is not None:
            return found
        value = sum(self.count(after, left - 1, mask) for op, persist, after in
                    self.choices(sim, left, mask[0]) if allowed_by(mask, op, persist))
        if kept:
            self._stored.put(key, value)
        return value

    def _last(self, sim: Sim, mask: Mask) -> int:
        """`count` with one step to go: its valid choices, counted without making the Sim each
        leaves (the most of a count's work is here: every workload is one such choice)."""
        families, points = mask[0] & self.positions[-1][0], mask[1] & self.positions[-1][1]
        total = 0
        for op in OPS:
            if op.family in families:
                after = sim.copy()
                if apply(after, op, self.seq):
                    total += sum(p.kind in points for p in last_points(after, op))
        return total

    def size(self, sim: Sim, left: int, mask: Mask, below: Mask | None) -> int:
        """`count`, less the workloads all of whose steps are in `below` (if any)."""
        whole = self.count(sim, left, mask)
        return whole - self.count(sim, left, meet(mask, below)) if below is not None else whole

    def total(self) -> int:
        """How many workloads the filter lets through."""
        return self.count(mask=self.mask)

    def blocks(self, mask: Mask):
        """(`mask` met with the block's tables, the tables before them or None, the block's
        first id in the whole space) for each id block, in id order."""
        below, first = None, 0
        for grown in GROWN:
            yield meet(mask, grown), below, first
            below, first = grown, self.count(mask=grown)

    def _descend(self, rank: int, mask: Mask, below: Mask | None) -> tuple[list, Sim]:
        """The steps of the `rank`-th workload of `mask` that is not all of `below`."""
        sim, steps = Sim(), []
        for left in range(self.seq, 0, -1):
            for op, persist, after in self.choices(sim, left):
                if not allowed_by(mask, op, persist):
                    continue
                still = still_below(below, op, persist)
                size = self.size(after, left - 1, mask, still)
                if rank < size:
                    steps.append(Step(op, persist))
                    sim, below = after, still
                    break
                rank -= size
        return steps, sim

    def _ranked(self, rank: int, mask: Mask) -> tuple[list, Sim]:
        """The `rank`-th workload of `mask` in id order: block after block."""
        for part, below, _ in self.blocks(mask):
            size = self.size(Sim(), self.seq, part, below)
            if rank < size:
                return self._descend(rank, part, below)
            rank -= size
        raise IndexError(rank)

    def workload(self, index: int) -> Workload:
        """The workload numbered `index` in the whole space."""
        if not 0 <= index < self.count():
            ident = workload_id(self.seq, index, self.synced, self.shape, self.extra)
            raise UsageError(f"no workload {ident}: {self.name} has {self.count()}")
        steps, sim = self._ranked(index, WHOLE)
        return self._made(index, steps, sim)

    @property
    def setup(self) -> str:
        return setup_kind(self.synced, self.extra)

    @property
    def name(self) -> str:
        return f"shape {self.shape}" if self.shape else f"seq {self.seq}"

    def _made(self, index: int, steps, sim: Sim) -> Workload:
        return Workload(self.seq, index, tuple(steps), ordered_setup(sim.setup), self.synced, shape=self.shape,
                        extra=self.extra)

    def locate(self, steps) -> int:
        """The id of the workload made of `steps`; UsageError if it is not one of the space."""
        steps = tuple(steps)
        mask, below, base = list(self.blocks(WHOLE))[block_of(steps)]
        sim = Sim()
        for left, wanted in zip(range(self.seq, 0, -1), steps):
            for op, persist, after in self.choices(sim, left):
                if not allowed_by(mask, op, persist):
                    continue
                still = still_below(below, op, persist)
                if Step(op, persist) == wanted:
                    sim, below = after, still
                    break
                base += self.size(after, left - 1, mask, still)
            else:
                raise UsageError(f"not a {self.name} workload: {wanted.text()} is invalid or not allowed there")
        return base

    def index_of(self, rank: int) -> int:
        """The id of the filter's `rank`-th workload (the whole space's ranks are its ids)."""
        return rank if not self.filtered else self.locate(self._ranked(rank, self.mask)[0])

    def workloads(self):
        """Every workload the filter lets through, in order."""
        for (part, below, first), (ids, _, _) in zip(self.blocks(self.mask), self.blocks(WHOLE)):
            yield from self._walk(Sim(), self.seq, first, (), (part, ids), below)

    def _walk(self, sim: Sim, left: int, base: int, steps: tuple, masks: tuple[Mask, Mask], below: Mask | None):
        """`masks`: the filter's, and the one the ids are counted in."""
        if left == 0:
            yield self._made(base, steps, sim)
            return
        mask, ids = masks
        for op, persist, after in self.choices(sim, left):
            if not allowed_by(ids, op, persist):
                continue
            still = still_below(below, op, persist)
            if allowed_by(mask, op, persist) and self.size(after, left - 1, mask, still):
                yield from self._walk(after, left - 1, base, steps + (Step(op, persist),), masks, still)
            base += self.size(after, left - 1, ids, still)

    def sample(self, k: int, seed: int) -> list[int]:
        """`k` ids drawn without replacement by `seed` from those the filter lets through, in order."""
        total = self.total()
        ranks = random.Random(seed).sample(range(total), min(k, total))
        return sorted(self.index_of(r) for r in ranks)

    def parse(self, ident: str) -> Workload:
        """The workload an id names; UsageError if it names none of this space."""
        m = _matched(ident)
        if (m.group(3) or "") != self.shape:
            raise UsageError(f"workload {ident} is not of {f'--shape {self.shape}' if self.shape else 'a --seq space'}")
        if int(m.group(1)) != self.seq:
            raise UsageError(f"workload {ident} is not of --seq {self.seq}")
        if m.group(2) != MARKS[self.setup]:
            raise UsageError(f"workload {ident} is not of --setup {self.setup}")
        return self.workload(int(m.group(4)))


def checked(names, known, what: str) -> tuple[str, ...]:
    names = tuple(names)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown {what} {unknown[0]!r}: expected one of {', '.join(known)}")
    return names


def workload_of(text: str, synced: bool = True) -> Workload:
    """The workload `text` describes, with its id."""
    steps = steps_of(text)
    if len(steps) not in SEQS:
        raise UsageError(f"{len(steps)} operations: a workload has {', '.join(map(str, SEQS))}")
    space = whole_space(len(steps), synced)
    return space.workload(space.locate(steps))


@cache
def whole_space(seq: int, synced: bool = True, extra: str = "") -> Space:
    """The unfiltered space of `seq`, its counts kept for the life of the process."""
    return Space(seq, synced=synced, extra=extra)


def forget_counts() -> None:
    """Drop every count kept in the process and stop reading and writing the disk's (which are
    of the rules as written): for a test that changed the model's rules."""
    _COUNTS.clear()
    _STORED.clear()
    _KEEP["on"] = False
    whole_space.cache_clear()
    shape_space.cache_clear()


@cache
def shape_space(name: str, synced: bool = True, extra: str = "") -> Space:
    """The unfiltered space of the shape `name` (UsageError on an unknown one)."""
    shape = shape_named(name)
    return Space(len(shape.positions), synced=synced, shape=shape, extra=extra)


def _matched(ident: str) -> re.Match:
    m = _ID.fullmatch(ident)
    if not m:
        raise UsageError(f"bad workload id {shown(ident)}: expected {ID_FORMS}")
    return m


def space_of(ident: str) -> Space:
    """The whole space an id belongs to: its seq's, or its shape's."""
    m = _matched(ident)
    seq, synced, shape = int(m.group(1)), m.group(2) != "u", m.group(3)
    extra = next((kind for kind in EXTRAS if MARKS[kind] == m.group(2)), "")
    if shape:
        space = shape_space(shape, synced, extra)
        if space.seq != seq:
            raise UsageError(f"bad workload id {shown(ident)}: shape {shape} has {space.seq} operations, not {seq}")
        return space
    return whole_space(seq, synced, extra) if seq in SEQS else Space(seq, synced=synced, extra=extra)
