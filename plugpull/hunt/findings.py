"""A hunt's failing workloads grouped into findings: one per signature, the same damage under
the same rules after the same operations, whatever the names.

    for f in findings(lines, settings, hunt_dir):
        print(f.count, f.signature.text(), f.representative.line["id"])

A signature has three parts (docs/hunt.md#findings):
- `kinds`, what the failing states show: a name `missing`, a name `still-there` that should be
  gone, `two-names` on one inode, a wrong `nlink`, `contents`, `size`, `kind`, `xattr` or
  symlink `target`, a `stray` name no point has; or, beside the oracle, `fsck`, `mount` and
  `kernel`. They are read from what made each state's verdict: the lost facts of a
  `data-loss` state, the broken invariants of an `inconsistent` one;
- `rules`, the rules broken at the first failing point (the oracle's, or the checks' names),
  else the journal line's rules;
- `shape`, the operations with directories renamed X, Y... and file paths f, g... in order of
  first appearance, of the workload's core: the steps the failure's names are about
  (`core_steps`).

A journal line written before lines carried `lost_kinds` gets them from its saved states
(`failing/ID/states/*/state.json`), else from its reason and rules alone.
"""

import json
import re
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from plugpull.files import read_regular_text
from plugpull.hunt.journal import line_kernel
from plugpull.hunt.rules import rules_broken

KIND_TEXT = {
    "missing": "a name missing", "still-there": "a name that should be gone still there",
    "two-names": "two names on one inode", "nlink": "a wrong link count", "contents": "wrong contents",
    "size": "a wrong size", "kind": "a name of the wrong kind", "xattr": "wrong xattrs", "target": "a wrong symlink target",
    "stray": "a name no point of the workload has", "inconsistent": "a tree no point gives", "lost": "an owed fact lost",
    "fsck": "fsck found damage", "mount": "the recovery mount failed", "kernel": "the guest kernel failed",
    "create": "no new name could be made after recovery",
}
CHECK_KINDS = {"fs-corrupt": "fsck", "not-writable": "create", "unmountable": "mount", "kernel-crash": "kernel"}
FIELD_KINDS = {"size": "size", "digest": "contents", "nlink": "nlink", "xattrs": "xattr", "target": "target"}

LOST_FACT = re.compile(r"(?P<path>\S+): (?P<field>\w+) is (?P<value>.*?), owed (?P<owed>.*) \([a-z0-9-]+, point \d+\)")
HELD = re.compile(r"the \w+ owed at \S+(?: \(contents \w+\))? is under none of (?P<names>.*) \([a-z0-9-]+, point \d+\)")
WRONG_KIND = re.compile(r"(?P<path>\S+) is a \w+, which no point of the workload has there")
ONE_INODE = re.compile(r"(?P<p>\S+) and (?P<q>\S+) are one inode")
STRAY = re.compile(r"(?P<path>\S+) is a name no point of the workload has")


def fact_damage(reason: str) -> tuple[str, tuple[str, ...]]:
    """A lost fact's kind and the names it is about."""
    if m := LOST_FACT.fullmatch(reason):
        if m["field"] != "kind":
            return FIELD_KINDS.get(m["field"], "lost"), (m["path"],)
        if m["value"] == "absent":
            return "missing", (m["path"],)
        return ("still-there" if "absent" in m["owed"].split(" or ") else "kind"), (m["path"],)
    if m := HELD.fullmatch(reason):
        return "missing", tuple(m["names"].split(", "))
    return "lost", ()


def invariant_damage(broken: str) -> tuple[str, tuple[str, ...]]:
    """A broken invariant's kind and the names it is about."""
    if m := ONE_INODE.match(broken):
        return "two-names", (m["p"], m["q"])
    if m := WRONG_KIND.fullmatch(broken):
        return "kind", (m["path"],)
    if m := STRAY.fullmatch(broken):
        return "stray", (m["path"],)
    return "inconsistent", ()


def state_damage(verdict: str, lost, broken) -> tuple[set[str], set[str]]:
    """The kinds and names of what made one state's verdict (none for a clean state)."""
    if verdict in CHECK_KINDS:
        return {CHECK_KINDS[verdict]}, set()
    found = []
    if verdict == "inconsistent":
        found = [invariant_damage(str(b)) for b in broken or ()] or [("inconsistent", ())]
    elif verdict == "data-loss":
        found = [fact_damage(str(item.get("reason", ""))) for item in lost or () if isinstance(item, dict)]
        found = found or [("lost", ())]
    return {k for k, _ in found}, {n for _, names in found for n in names}


def damage(states) -> dict:
    """The journal line's fields of a workload's states (each with verdict, lost, broken,
    acks_required): `lost_kinds` and `lost_names`, sorted; `first_point`, the fewest acks a
    failing state owed (the steps after that point's were not yet run where it failed); and
    `first_rules`, the rules the states at that point broke: what the failure's shape, cut
    at that point, explains (a later point's rules are often its consequence)."""
    kinds, names, owed = set(), set(), {}
    for s in states:
        k, n = state_damage(s.verdict, s.lost, s.broken)
        kinds |= k
        names |= n
        if k and isinstance(getattr(s, "acks_required", None), int):
            owed.setdefault(s.acks_required, set()).update(rules_broken(s.verdict, s.lost or []))
    first = {"first_point": min(owed), "first_rules": sorted(owed[min(owed)])} if owed else {}
    return {"lost_kinds": sorted(kinds), "lost_names": sorted(names), **first}


@dataclass(frozen=True)
class Saved:
    """A saved state's verdict and what it lost or broke, as its state.json holds them."""

    verdict: str
    lost: list
    broken: list
    acks_required: int | None = None


def saved_damage(line: dict, hunt_dir: Path | None) -> dict | None:
    """`damage` of a line's saved states (an older journal's line), or None if none are found."""
    if hunt_dir is None or not isinstance(line.get("artifact"), str):
        return None
    states = []
    try:
        found = sorted((Path(hunt_dir) / line["artifact"] / "states").glob("*/state.json"))
    except (ValueError, OSError):  # a NUL in the name, a name too long: no such directory
        return None
    for path in found:
        try:
            doc = json.loads(read_regular_text(path))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("verdict"), str):
            states.append(Saved(doc["verdict"], doc.get("lost") or [], doc.get("broken") or [],
                                doc.get("acks_required") if isinstance(doc.get("acks_required"), int) else None))
    return damage(states) if states else None


def reason_damage(line: dict) -> dict:
    """What a line alone says: its rules, and its first failing state's reason."""
    checks = {"fsck", "mount", "kernel", "inconsistent"}
    kinds = {rule if rule in checks else "lost" for rule in line.get("rules") or {}}
    names: set[str] = set()
    reason = re.sub(r" \(and \d+ more\)$", "", str(line.get("reason", "")))
    if reason.startswith("invariant broken: "):
        kind, found = invariant_damage(reason.removeprefix("invariant broken: "))
        kinds = (kinds - {"inconsistent"}) | {kind}
        names |= set(found)
    return {"lost_kinds": sorted(kinds), "lost_names": sorted(names)}


def line_damage(line: dict, hunt_dir: Path | None = None) -> dict:
    """`lost_kinds`, `lost_names`, `first_point` and `first_rules` of a journal line: its own,
    else its saved states', else what its reason and rules say."""
    if (kinds := names_in(line.get("lost_kinds"))) is not None:
        first = {key: value for key, value in (("first_point", line.get("first_point")),
                                               ("first_rules", names_in(line.get("first_rules"))))
                 if isinstance(value, (int, list)) and not isinstance(value, bool)}
        if "first_rules" not in first and (saved := saved_damage(line, hunt_dir)):  # a line from before them
            first = {key: saved[key] for key in ("first_point", "first_rules") if key in saved}
        return {"lost_kinds": kinds, "lost_names": names_in(line.get("lost_names")) or [], **first}
    return saved_damage(line, hunt_dir) or reason_damage(line)


def names_in(value) -> list[str] | None:
    """A list of names as a line holds them (`lost_kinds`, `lost_names`, `first_rules`); None
    for any other value, a list holding anything but strings too: such a field is left out."""
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None



@dataclass(frozen=True)
class FindingStep:
    op: str  # the operation's name: "rename.file"
    args: tuple[str, ...]
    persist: str  # "", "sync", "fsync", "fdatasync"
    persist_path: str

    @property
    def family(self) -> str:
        return self.op.partition(".")[0]


def steps(ops: str) -> list[FindingStep]:
    """A journal line's `ops` read back: "creat A/foo, fsync A; rename.file A/foo B/bar, sync"."""
    out = []
    for part in ops.split(";"):
        op_text, _, persist_text = (x.strip() for x in part.partition(","))
        name, *args = op_text.split() or [""]
        kind, _, path = persist_text.partition(" ")
        out.append(FindingStep(name, tuple(args), kind, path))
    return out


def up_to_point(parsed: list[FindingStep], point: int | None, names=()) -> list[FindingStep]:
    """The steps a state that owed `point` acks can show, and that name the failure's
    `names`: those up to persistence point `point`, or up to the next one, whose step may
    have been under way (an ack is stamped when the host reads it, so the next step's writes
    can come first). All of them when `point` is None or neither names them all."""
    if point is None:
        return parsed
    named = set(names) & {a for s in parsed for a in s.args}
    for last in (max(point, 1), point + 1):
        seen = 0
        for i, s in enumerate(parsed):
            seen += bool(s.persist)
            if seen >= last:
                if named <= {a for t in parsed[:i + 1] for a in t.args}:
                    return parsed[:i + 1]
                break
    return parsed


def related(parsed: list[FindingStep], names) -> set[str]:
    """The failure's names and every name a rename or a link ties to one of them (a name under
    a renamed directory is tied to the same name under its other name, and to both)."""
    out = set(names)
    while True:
        more = {a for s in parsed if s.family in ("rename", "link") and out & set(s.args) for a in s.args}
        for s in parsed:
            if s.op == "rename.dir" and len(s.args) == 2:
                moved = {n.partition("/")[2] for n in out if n.partition("/")[0] in s.args and "/" in n}
                more |= {f"{d}/{rest}" for d in s.args for rest in moved} | (set(s.args) if moved else set())
        if more <= out:
            return out
        out |= more


CREATES = {"creat": 0, "mkdir": 0, "symlink": 0, "link": 1}  # the argument a step creates


def core_steps(parsed: list[FindingStep], names) -> tuple[list[int], set[int]]:
    """The steps of a workload that a failure on `names` is about (docs/hunt.md#findings),
    and which of them create a name: every step that creates one of the related names, the
    fewest further steps that name them all (each, where several do), and the persistence point
    that follows the last of them. Names no step names are not looked for; a failure left
    with none keeps every step."""
    every = list(range(len(parsed)))
    names = related(parsed, names) & {a for s in parsed for a in s.args}
    if not names:
        return every, set()
    made = {i for i, s in enumerate(parsed) if s.family in CREATES and len(s.args) > CREATES[s.family]
            and s.args[CREATES[s.family]] in names}
    covers = [set(c) | made for n in range(len(parsed) + 1) for c in combinations(every, n)
              if names <= {a for i in set(c) | made for a in parsed[i].args}]
    if not covers:
        return every, set()
    fewest = min(map(len, covers))
    chosen = set().union(*(c for c in covers if len(c) == fewest))
    persisted = next((i for i in range(max(chosen), len(parsed)) if parsed[i].persist), None)
    return sorted(chosen | ({persisted} if persisted is not None else set())), made


class Letters:
    """Directories as X, Y, Z..., file paths as f, g, h... in order of first appearance."""

    def __init__(self):
        self.dirs: dict[str, str] = {}
        self.files: dict[str, str] = {}

    def dir(self, name: str) -> str:
        return name if name == "." else self.dirs.setdefault(name, "XYZWVU"[len(self.dirs) % 6])

    def path(self, path: str) -> str:
        head, sep, _ = path.rpartition("/")
        if not sep:
            return self.dir(path)
        return f"{self.dir(head)}/{self.files.setdefault(path, 'fghijklm'[len(self.files) % 8])}"


SAME_SHAPE = {"rename.file": "rename", "rename.over": "rename"}  # a move to a free name or over a file


def abstracted(parsed: list[FindingStep]) -> str:
    """Steps as text with their names abstracted (`Letters`), a move to a free name and over
    a file alike (`SAME_SHAPE`)."""
    letters, parts = Letters(), []
    for s in parsed:
        text = " ".join((SAME_SHAPE.get(s.op, s.op), *map(letters.path, s.args)))
        if s.persist:
            text += ", " + " ".join((s.persist, *([letters.path(s.persist_path)] if s.persist_path else [])))
        parts.append(text)
    return "; ".join(parts)


def shape(ops: str, names=None, point: int | None = None) -> str:
    """The operations with the names abstracted; with the failure's `names`, its core alone,
    among the steps run by its first failing `point`."""
    parsed = up_to_point(steps(ops), point, names or ())
    return abstracted([parsed[i] for i in core_steps(parsed, names)[0]] if names is not None else parsed)


def act(ops: str, names, point: int | None = None) -> str:
    """The core less the steps that create names: what a family of findings shares."""
    parsed = up_to_point(steps(ops), point, names)
    kept, made = core_steps(parsed, names)
    return abstracted([parsed[i] for i in kept if i not in made] or [parsed[i] for i in kept])


@dataclass(frozen=True, order=True)
class Signature:
    shape: str
    kinds: tuple[str, ...]
    rules: tuple[str, ...]
    act: str = field(default="", compare=False)  # the shape less its creations: the finding's family

    def text(self) -> str:
        return f"{self.shape}: {', '.join(self.kinds)} ({', '.join(self.rules)})"

    def kinds_text(self) -> str:
        return "; ".join(KIND_TEXT.get(k, k) for k in self.kinds)

    @property
    def family(self) -> tuple:
        return self.act or self.shape, self.kinds, self.rules


def signature(line: dict, hunt_dir: Path | None = None) -> Signature:
    found = line_damage(line, hunt_dir)
    ops, names, point = str(line.get("ops", "")), found["lost_names"], found.get("first_point")
    rules = found.get("first_rules") or line.get("rules") or {}
    return Signature(shape(ops, names, point), tuple(sorted(found["lost_kinds"])), tuple(sorted(rules)),
                     act(ops, names, point))


@dataclass(frozen=True, eq=False)
class Hunt:
    """A hunt's directory (None: lines alone), its settings (hunt.json) and journal lines."""

    dir: Path | None
    settings: dict
    lines: list


@dataclass(frozen=True, eq=False)
class Member:
    """A failing workload of a finding: its journal line, in hunt number `hunt`."""

    hunt: int
    line: dict

    @property
    def size(self) -> tuple:
        ops = str(self.line.get("ops", ""))
        return ops.count(";") + 1, len(ops), str(self.line.get("id", "")), self.hunt


@dataclass(frozen=True, eq=False)
class Finding:
    signature: Signature
    workloads: tuple[Member, ...]
    hunts: tuple[Hunt, ...]

    @property
    def count(self) -> int:
        """Its workloads, each once however many kernels it failed on."""
        return len({(m.hunt, m.line.get("id")) for m in self.workloads})

    @property
    def representative(self) -> Member:
        """The smallest workload: the fewest operations, then the shortest text, then the id."""
        return min(self.workloads, key=lambda m: m.size)

    def _settings(self, key: str) -> list[str]:
        return sorted({str(self.hunts[m.hunt].settings[key]) for m in self.workloads
                       if self.hunts[m.hunt].settings.get(key) is not None})

    @property
    def kernels(self) -> list[str]:
        """The releases its workloads failed on: each line's own kernel."""
        return sorted({k for m in self.workloads if (k := line_kernel(m.line, self.hunts[m.hunt].settings))})

    @property
    def filesystems(self) -> list[str]:
        return self._settings("fs")

    def count_in(self, hunt: int) -> int:
        return len({m.line.get("id") for m in self.workloads if m.hunt == hunt})


def across(hunts) -> list[Finding]:
    """The findings of the failing workloads of `hunts`, the most workloads first."""
    hunts = tuple(hunts)
    groups: dict[Signature, list[Member]] = {}
    for i, hunt in enumerate(hunts):
        for line in hunt.lines:
            if line.get("failing"):
                groups.setdefault(signature(line, hunt.dir), []).append(Member(i, line))
    found = [Finding(sig, tuple(sorted(members, key=lambda m: m.size)), hunts) for sig, members in groups.items()]
    return sorted(found, key=lambda f: (-f.count, f.signature))


def families(found: list[Finding]) -> list[list[Finding]]:
    """Findings grouped by family (the same act, kinds and rules), in the order of their
    first finding."""
    out: dict[tuple, list[Finding]] = {}
    for f in found:
        out.setdefault(f.signature.family, []).append(f)
    return list(out.values())


def findings(lines: list[dict], settings: dict | None = None, hunt_dir: Path | None = None) -> list[Finding]:
    """The findings of one hunt's journal lines (`hunt_dir`: where their saved states are)."""
    return across([Hunt(hunt_dir, settings or {}, list(lines))])
