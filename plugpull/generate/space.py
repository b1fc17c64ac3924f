"""The space of generated workloads: every sequence of `seq` core operations from the table,
each followed by a persistence point or not (the last always by one), that is valid on the
simulated tree. Workloads are numbered in depth-first order (the table's order at each step,
then the persistence choices' order), and the number is the id: `seq2-000412`.

Nothing is listed to be counted: the number of valid continuations depends only on the
simulated tree's shape (`Sim.key`), so counts are memoised on it, and an id is turned back into
its workload (or a sample drawn) by walking down the counts."""

import random
import re
from dataclasses import dataclass
from functools import cache, cached_property

from plugpull.errors import UsageError
from plugpull.generate.ops import CORE_OPS, FAMILIES, INITIAL_SIZE, PERSISTENCE, SETUP_BYTE, Op, Persist, Sim, \
    apply, persistence_choices
from plugpull.generate.tree import DIR, FILE, Inode, Tree
from plugpull.values import shown

SEQS = (1, 2, 3)
_ID = re.compile(r"seq([0-9]{1,2})-([0-9]{1,12})")  # no id of thousands of digits reaches int()


@dataclass(frozen=True)
class Step:
    op: Op
    persist: Persist | None

    def text(self) -> str:
        return self.op.text() + (f", {self.persist.text()}" if self.persist else "")


@dataclass(frozen=True)
class Workload:
    seq: int
    index: int
    steps: tuple[Step, ...]
    setup: tuple[str, ...]  # the names the setup creates, parents first

    @property
    def ident(self) -> str:
        return workload_id(self.seq, self.index)

    def text(self) -> str:
        return "; ".join(s.text() for s in self.steps)

    def points(self) -> list[int]:
        """The steps (1-based) followed by a persistence point; point k is the k-th of them."""
        return [i for i, s in enumerate(self.steps, 1) if s.persist]

    @cached_property
    def trees(self) -> list[Tree]:
        """The model tree after the setup (index 0) and after each operation (index i)."""
        sim = Sim(setup_tree(self.setup))
        out = [sim.tree.copy()]
        for i, step in enumerate(self.steps, 1):
            if not apply(sim, step.op, i):
                raise ValueError(f"{self.ident}: step {i} ({step.op.text()}) is invalid")
            out.append(sim.tree.copy())
        return out


def workload_id(seq: int, index: int) -> str:
    return f"seq{seq}-{index:06d}"


def setup_tree(names) -> Tree:
    tree = Tree()
    for path in names:
        node = Inode(FILE, bytes([SETUP_BYTE[path]]) * INITIAL_SIZE) if path in SETUP_BYTE else Inode(DIR)
        tree.paths[path] = tree.new_inode(node)
    return tree


def ordered_setup(names) -> tuple[str, ...]:
    """Directories before the files in them."""
    return tuple(sorted(names, key=lambda p: (p.count("/"), p)))


class Space:
    """The workloads of `seq` operations, optionally only those whose operations are all of
    `families` and whose persistence points are all of `persistence` (ids stay those of the
    whole space)."""

    def __init__(self, seq: int, families=FAMILIES, persistence=PERSISTENCE):
        if seq not in SEQS:
            raise UsageError(f"bad --seq {seq!r}: expected one of {', '.join(map(str, SEQS))}")
        self.seq = seq
        self.families = frozenset(checked(families, FAMILIES, "operation"))
        self.persistence = frozenset(checked(persistence, PERSISTENCE, "persistence point"))
        self.filtered = self.families != set(FAMILIES) or self.persistence != set(PERSISTENCE)
        self._memo: dict = {}

    def allowed(self, op: Op, persist: Persist | None) -> bool:
        return op.family in self.families and (persist is None or persist.kind in self.persistence)

    def choices(self, sim: Sim, left: int):
        """(op, persistence point, the Sim after them) for every valid next step, in order."""
        step = self.seq - left + 1
        for op in CORE_OPS:
            after = sim.copy()
            if apply(after, op, step):
                for persist in persistence_choices(after.tree, op, last=left == 1):
                    yield op, persist, after

    def count(self, sim: Sim | None = None, left: int | None = None, filtered: bool = False) -> int:
        """The workloads from `sim` with `left` operations to go (by default: all of them);
        `filtered`: only those the filter allows."""
        sim = Sim() if sim is None else sim
        left = self.seq if left is None else left
        if left == 0:
            return 1
        key = (sim.key(), left, filtered)
        if key not in self._memo:
            self._memo[key] = sum(self.count(after, left - 1, filtered) for op, persist, after in
                                  self.choices(sim, left) if not filtered or self.allowed(op, persist))
        return self._memo[key]

    def total(self) -> int:
        """How many workloads the filter lets through."""
        return self.count(filtered=self.filtered)

    def workload(self, index: int) -> Workload:
        """The workload numbered `index` in the whole space."""
        if not 0 <= index < self.count():
            raise UsageError(f"no workload {workload_id(self.seq, index)}: seq {self.seq} has {self.count()}")
        sim, steps, rest = Sim(), [], index
        for left in range(self.seq, 0, -1):
            for op, persist, after in self.choices(sim, left):
                size = self.count(after, left - 1)
                if rest < size:
                    steps.append(Step(op, persist))
                    sim = after
                    break
                rest -= size
        return Workload(self.seq, index, tuple(steps), ordered_setup(sim.setup))

    def locate(self, steps) -> int:
        """The id of the workload made of `steps`; UsageError if it is not one of the space."""
        sim, base = Sim(), 0
        for left, wanted in zip(range(self.seq, 0, -1), steps):
            for op, persist, after in self.choices(sim, left):
                if Step(op, persist) == wanted:
                    sim = after
                    break
                base += self.count(after, left - 1)
            else:
                raise UsageError(f"not a seq {self.seq} workload: {wanted.text()} is invalid or not allowed there")
        return base

    def index_of(self, rank: int) -> int:
        """The id of the filter's `rank`-th workload."""
        sim, base = Sim(), 0
        for left in range(self.seq, 0, -1):
            for op, persist, after in self.choices(sim, left):
                size = self.count(after, left - 1, self.filtered) if self.allowed(op, persist) else 0
                if rank < size:
                    sim = after
                    break
                rank -= size
                base += self.count(after, left - 1)
        return base

    def workloads(self):
        """Every workload the filter lets through, in order."""
        yield from self._walk(Sim(), self.seq, 0, ())

    def _walk(self, sim: Sim, left: int, base: int, steps: tuple):
        if left == 0:
            yield Workload(self.seq, base, steps, ordered_setup(sim.setup))
            return
        for op, persist, after in self.choices(sim, left):
            if self.allowed(op, persist):
                yield from self._walk(after, left - 1, base, steps + (Step(op, persist),))
            base += self.count(after, left - 1)

    def sample(self, k: int, seed: int) -> list[int]:
        """`k` ids drawn without replacement by `seed` from those the filter lets through, in order."""
        total = self.total()
        ranks = random.Random(seed).sample(range(total), min(k, total))
        return sorted(self.index_of(r) for r in ranks)

    def parse(self, ident: str) -> Workload:
        """The workload an id names; UsageError if it names none of this space."""
        m = _ID.fullmatch(ident)
        if not m:
            raise UsageError(f"bad workload id {shown(ident)}: expected seqN-NNNNNN")
        if int(m.group(1)) != self.seq:
            raise UsageError(f"workload {ident} is not of --seq {self.seq}")
        return self.workload(int(m.group(2)))


def checked(names, known, what: str) -> tuple[str, ...]:
    names = tuple(names)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown {what} {unknown[0]!r}: expected one of {', '.join(known)}")
    return names


def steps_of(text: str) -> tuple[Step, ...]:
    """`Workload.text()` read back: "creat A/foo, fsync A; rename.file A/foo B/bar, sync"."""
    ops = {op.text(): op for op in CORE_OPS}
    steps = []
    for part in text.split(";"):
        op_text, _, persist_text = (x.strip() for x in part.partition(","))
        if op_text not in ops:
            raise UsageError(f"unknown operation {op_text!r}")
        kind, _, path = persist_text.partition(" ")
        if persist_text and (kind not in PERSISTENCE or (kind == "sync") != (not path)):
            raise UsageError(f"bad persistence point {persist_text!r}")
        steps.append(Step(ops[op_text], Persist(kind, path or None) if persist_text else None))
    return tuple(steps)


def workload_of(text: str) -> Workload:
    """The workload `text` describes, with its id."""
    steps = steps_of(text)
    if len(steps) not in SEQS:
        raise UsageError(f"{len(steps)} operations: a workload has {', '.join(map(str, SEQS))}")
    space = whole_space(len(steps))
    return space.workload(space.locate(steps))


@cache
def whole_space(seq: int) -> Space:
    """The unfiltered space of `seq`, its counts kept for the life of the process."""
    return Space(seq)


def space_of(ident: str) -> Space:
    """The whole space an id belongs to."""
    m = _ID.fullmatch(ident)
    if not m:
        raise UsageError(f"bad workload id {shown(ident)}: expected seqN-NNNNNN")
    return whole_space(int(m.group(1))) if int(m.group(1)) in SEQS else Space(int(m.group(1)))
