"""A generated workload (`Workload`): its steps (`Step`), its setup, and its id's text; a
workload's text read back into its steps (`steps_of`). `space` numbers them."""

from dataclasses import dataclass
from functools import cached_property

from plugpull.errors import UsageError
from plugpull.generate.ops import OPS, PERSISTENCE, Op, Persist, refusal
from plugpull.generate.setups import MARKS, Made, built, setup_kind
from plugpull.generate.tree import Tree


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
    synced: bool = True  # the setup ends with sync; else it is in the same transaction as the operations
    refused: frozenset = frozenset()  # what the filesystem refuses, not done: ops.refusal's names, or `extra`
    shape: str = ""  # the shape whose space numbers it ("": the whole space of its seq)
    extra: str = ""  # a synced setup with more (`setups.EXTRAS`), where `setups.built` gives it

    @property
    def ident(self) -> str:
        return workload_id(self.seq, self.index, self.synced, self.shape, self.extra)

    @property
    def kind(self) -> str:
        """The setup's kind (`setups.MARKS`)."""
        return setup_kind(self.synced, self.extra)

    @property
    def made(self) -> Made:
        """What the setup makes of A/foo past its names: links, xattrs or a fifo (`setups`)."""
        return self._built[0]

    def text(self) -> str:
        return "; ".join(s.text() for s in self.steps)

    def points(self) -> list[int]:
        """The steps (1-based) followed by a persistence point; point k is the k-th of them."""
        return [i for i, s in enumerate(self.steps, 1) if s.persist]

    def refuses(self, op: Op) -> bool:
        return refusal(op, self.refused) is not None

    @property
    def trees(self) -> list[Tree]:
        """The model tree after the setup (index 0) and after each operation (index i); an
        operation the filesystem refuses leaves the tree as it was."""
        return self._built[1]

    @cached_property
    def _built(self) -> tuple[Made, list[Tree]]:
        return built(self)


def workload_id(seq: int, index: int, synced: bool = True, shape: str = "", extra: str = "") -> str:
    return f"seq{seq}{MARKS[setup_kind(synced, extra)]}{'.' + shape if shape else ''}-{index:06d}"


def ordered_setup(names) -> tuple[str, ...]:
    """Directories before the files in them."""
    return tuple(sorted(names, key=lambda p: (p.count("/"), p)))


def steps_of(text: str) -> tuple[Step, ...]:
    """`Workload.text()` read back: "creat A/foo, fsync A; rename.file A/foo B/bar, sync"."""
    ops = {op.text(): op for op in OPS}
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
