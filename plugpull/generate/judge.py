"""The check of a recovered tree against a generated workload: an owed fact missing or wrong is
`data-loss`; a tree that no point of the workload could give is `inconsistent`; else `clean`.

The recovered tree is `path -> Entry` (`tree.read_tree` reads one from a directory). Which
trees a point could give: its names are the model's at some point (from the empty work
directory through the setup and every operation), with the kind they had there, and two names
share an inode only if they did at some point (else a rename was half done, or a link
appeared from nowhere). The order in which points reach the disk is not judged: a filesystem
may persist a later operation before an earlier one that nothing forced out."""

from dataclasses import dataclass
from itertools import combinations

from plugpull.check.verdict import Verdict
from plugpull.generate.oracle import Held, Owed, held, on_profile, owed
from plugpull.generate.setups import setup_tree
from plugpull.generate.space import Workload
from plugpull.generate.tree import DIR, FIFO, FILE, SYMLINK, Entry, Tree

FACT_KIND = {"size": FILE, "digest": FILE, "nlink": FILE, "xattrs": FILE, "target": SYMLINK, "extents": FILE}
FIFO_FACTS = ("nlink",)  # a fifo's facts beside its kind (the fifo setup's)


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    lost: tuple[tuple[int, str], ...] = ()  # (point, why): owed facts missing or wrong, with their rules
    broken: tuple[str, ...] = ()  # why no point of the workload gives this tree

    @property
    def reason(self) -> str:
        first = (self.broken or [why for _, why in self.lost] or ("every owed fact holds",))[0]
        more = len(self.broken or self.lost) - 1
        return first + (f" (and {more} more)" if more > 0 else "")


def prefix_trees(workload: Workload) -> list[Tree]:
    """Every tree a point of the workload has: the setup being made (its fifo a fifo from the
    first), then after each operation."""
    return [setup_tree(workload.setup[:m], workload.made.at_creation) for m in range(len(workload.setup))] + \
        list(workload.trees)


def recovered_fact(entry: Entry | None, name: str):
    """The recovered value of fact `name`; `...` when it cannot be judged (the path holds
    something else, or the reader did not say)."""
    if name == "kind":
        return None if entry is None else entry.kind
    if entry is None or (entry.kind != FACT_KIND[name] and not (entry.kind == FIFO and name in FIFO_FACTS)):
        return ...
    value = getattr(entry, name)
    return ... if value is None and name in ("nlink", "extents") else value


def lost_facts(facts: list[Owed], kept: list[Held], recovered: dict[str, Entry]) -> list[tuple[int, str]]:
    lost = []
    for o in facts:
        value = recovered_fact(recovered.get(o.path), o.name)
        if value is not ... and not holds(o, value):
            lost.append((o.point, f"{o.path}: {o.name} is {_show(value)}, owed "
                                  f"{' or '.join(sorted(map(_show, o.values)))} ({o.rule}, point {o.point})"))
    for h in kept:
        if not any(_is_held(recovered.get(p), h) for p in h.names):
            which = f"the {h.kind} owed at {h.names[0]}" + (f" (contents {h.digest[:12]})" if h.digest else "")
            lost.append((h.point, f"{which} is under none of {', '.join(h.names)} ({h.rule}, point {h.point})"))
    return lost


def holds(o: Owed, value) -> bool:
    """The recovered `value` is one `o` accepts; of `extents`, the blocks an extent covers take in
    those of one of the values owed (a block past the end may be allocated without being owed)."""
    if o.name == "extents":
        return any(v is None or v <= value for v in o.values)
    return value in o.values


def _is_held(entry: Entry | None, h: Held) -> bool:
    """`entry` may be the held file or directory: its kind, and its contents where they are
    pinned (a file with other contents is another file, or the held one with its data lost)."""
    if entry is None or entry.kind != h.kind:
        return False
    return h.digest is None or entry.digest is None or entry.digest == h.digest


def _show(value) -> str:
    if value is None:
        return "absent"
    if isinstance(value, str) and len(value) == 64:
        return value[:12]  # a digest
    return str(value)


def broken_by(workload: Workload, recovered: dict[str, Entry]) -> list[str]:
    trees = prefix_trees(workload)
    broken = [f"{p} is a {e.kind}, which no point of the workload has there"
              for p, e in recovered.items() if all(t.kind(p) != e.kind for t in trees)]
    for p, q in combinations(shared_names(trees, recovered), 2):
        if recovered[p].ino == recovered[q].ino and not one_inode_in(trees, p, q):
            broken.append(f"{p} and {q} are one inode, which no point of the workload gives (a rename half done?)")
    return broken


def shared_names(trees: list[Tree], recovered: dict[str, Entry]) -> list[str]:
    """The recovered files and symlinks whose pairs on one inode are to be judged pair by pair:
    not those of an inode all of whose recovered names some tree has on one inode, and of
    names that share their inode in every tree (a setup's links), the first alone. A setup's
    thousands of links are not taken pair by pair."""
    files = [p for p, e in recovered.items() if e.kind != DIR and e.ino is not None]
    shared: dict[int, list[str]] = {}
    for p in files:
        shared.setdefault(recovered[p].ino, []).append(p)
    suspect = {p for names in shared.values() if len(names) > 1 and not all_one_inode_in(trees, names)
               for p in names}
    seen, out = set(), []
    for p in (p for p in files if p in suspect):
        signature = tuple(t.paths.get(p) for t in trees)
        if signature not in seen:
            seen.add(signature)
            out.append(p)
    return out


def all_one_inode_in(trees: list[Tree], names: list[str]) -> bool:
    """Some tree has all of `names` as names of one inode."""
    return any(names[0] in t.paths and len({t.paths.get(p) for p in names}) == 1 for t in trees)


def one_inode_in(trees: list[Tree], p: str, q: str) -> bool:
    """Some tree has `p` and `q` as names of one inode (a hard link made them so)."""
    return any(p in t.paths and t.paths.get(p) == t.paths.get(q) for t in trees)


def kept_apart(workload: Workload) -> list[tuple[str, str]]:
    """The pairs of names (files and symlinks some step has) that no step of `workload` makes
    one inode: a state that has them as one broke a rename's atomicity, `broken_by`'s invariant."""
    trees = prefix_trees(workload)
    names = sorted({p for t in trees for p in t.paths if t.kind(p) != DIR})
    return [(p, q) for p, q in combinations(names, 2) if not one_inode_in(trees, p, q)]


def judge(workload: Workload, fs: str, k: int | None, recovered: dict[str, Entry]) -> Judgement:
    """The verdict on `recovered`, a state in which the acks 0..k completed (k None: none)."""
    workload = on_profile(workload, fs)
    broken = broken_by(workload, recovered)
    facts = owed(workload, fs, k)
    lost = lost_facts(facts, held(workload, fs, k), recovered)
    if broken:
        return Judgement(Verdict.INCONSISTENT, tuple(lost), tuple(broken))
    if lost:
        return Judgement(Verdict.DATA_LOSS, tuple(lost))
    return Judgement(Verdict.CLEAN)
