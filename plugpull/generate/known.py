"""The known-bugs table: the fstests power-loss tests that name the kernel fix of the bug they
guard, each read against the generated space (suites/known/fstests.toml), and
docs/known-bugs.md written from it.

A bug the generator expresses names its workload (`gen`) and that workload's steps (`steps`);
one step off names the nearest workload (`near`), its steps and what differs (`off`); both, and
one out of reach, name what the generator lacks (`needs`, from `NEEDS`). `mismatches` checks
that an id still names its steps and that its guest program performs them in order, so the
table cannot drift from the generator.

docs/known-bugs.md is written from it by `knowndoc`."""

import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.generate.ops import Op, Persist
from plugpull.generate.program import GUEST, persist_command, program, step_command
from plugpull.generate.setups import QUOTA, link_loop, xattr_loop
from plugpull.generate.space import Step, Workload, space_of
from plugpull.generate.tree import FOO
from plugpull.paths import ROOT
from plugpull.testbed.fs import filesystem

DATA = ROOT / "suites" / "known" / "fstests.toml"
REACHES = ("expressible", "one step off", "out of reach")
NEEDS = {
    "more-ops": "more operations than three, in an order no shape has, or more than six",
    "third-name": "more names in one directory than foo, bar, the third name baz and the fourth qux (in A)",
    "nested-ops": "directories nested deeper than A/C, a directory moved up to the root",
    "sizes": "other offsets and sizes (sub-page punches, inline files, truncate up, MiB ranges)",
    "reflink": "a clone within one file, or of other ranges (FICLONERANGE)",
    "snapshot": "btrfs snapshots",
    "subvolume": "btrfs subvolumes",
    "evict": "inode eviction between steps (drop_caches)",
    "fsync-unlinked-open": "fsync of an open file after its last unlink",
    "open-unlinked": "a file held open across its last unlink and the power loss (an orphan)",
    "after-recovery": "a step after recovery (a name created after the replay)",
    "fiemap": "extents past EOF judged (fiemap)",
    "mkfs-option": "a filesystem made with other options (btrfs without no-holes)",
    "layout": "a metadata layout made by hundreds of items (extents, xattrs, entries) or 64 KiB nodes",
    "qgroups": "btrfs quota groups (and their rescan)",
    "balance": "btrfs balance, resumed at mount",
    "sync_file_range": "sync_file_range",
    "ranged-msync": "msync of part of a mapping",
    "many-links": "thousands of hard links to one file",
    "special-files": "special files (fifo, device node) and a hard link to a symlink",
    "attributes": "mode, owner and times judged (chmod)",
    "tmpfile": "an O_TMPFILE file",
    "async-io": "asynchronous direct I/O (io_uring, libaio) with O_DSYNC or fdatasync",
    "full-fs": "a full filesystem",
}


@dataclass(frozen=True)
class Bug:
    test: str
    fixes: tuple[tuple[str, str], ...]  # (commit id or "", subject)
    named_in: str
    workload: str
    reach: str
    gen: str = ""  # expressible: its id; one step off: the nearest id
    steps: tuple[Step, ...] = ()
    needs: tuple[str, ...] = ()
    off: str = ""
    note: str = ""
    setup: str = ""  # the setup its id must have (`setups.MARKS`), where the test's own setup needs one
    profile: str = ""  # the filesystem profile its id runs on (testbed/features.py), where the test's mkfs or mount
    # options need one: `btrfs+holes`

    @property
    def on(self) -> str:
        """`gen:ID`, and the profile it runs on where it has one."""
        return f"`gen:{self.gen}`" + (f" on `{self.profile}`" if self.profile else "")

    @property
    def fs(self) -> str:
        """The filesystem the fix is in, by its subject's prefix."""
        return self.fixes[0][1].split(":")[0].lower()


def step_of(row: dict) -> Step:
    family, _, variant = row["op"].partition(".")
    kind, _, path = row.get("point", "").partition(" ")
    return Step(Op(family, variant, tuple(row["args"])), Persist(kind, path or None) if kind else None)


def bug_of(row: dict) -> Bug:
    reach = row["reach"]
    if reach not in REACHES:
        raise UsageError(f"{row['test']}: bad reach {reach!r}: expected one of {', '.join(REACHES)}")
    unknown = [n for n in row.get("needs", ()) if n not in NEEDS]
    if unknown:
        raise UsageError(f"{row['test']}: unknown need {unknown[0]!r}")
    if (reach == "expressible") == bool(row.get("needs")) or (reach != "out of reach") != bool(row.get("steps")):
        raise UsageError(f"{row['test']}: {reach} takes {'steps and no needs' if reach == 'expressible' else 'needs'}")
    if row.get("profile"):
        filesystem(row["profile"])  # a UsageError naming what is wrong with it
    return Bug(row["test"], tuple((f["id"], f["subject"]) for f in row["fixes"]), row["named_in"], row["workload"],
               reach, row.get("gen", row.get("near", "")), tuple(map(step_of, row.get("steps", ()))),
               tuple(row.get("needs", ())), row.get("off", ""), row.get("note", ""), row.get("setup", ""),
               row.get("profile", ""))


@dataclass(frozen=True)
class Table:
    source: dict
    excluded: tuple[dict, ...]
    unnamed: tuple[dict, ...]
    bugs: tuple[Bug, ...]


def load(path: Path = DATA) -> Table:
    doc = tomllib.loads(path.read_text())
    return Table(doc["source"], tuple(doc.get("excluded", ())), tuple(doc.get("unnamed", ())),
                 tuple(bug_of(row) for row in doc["bug"]))


def mismatches(bug: Bug) -> list[str]:
    """How the workload `bug.gen` fails to be `bug.steps`, step by step: its operations and
    persistence points, and its guest program's commands in order. Empty when it is them."""
    if not bug.gen:
        return []
    workload = space_of(bug.gen).parse(bug.gen)
    if workload.steps != bug.steps:
        return [f"{bug.gen} is {workload.text()!r}, not {'; '.join(s.text() for s in bug.steps)!r}"]
    return setup_mismatches(bug, workload) + program_mismatches(workload)


def setup_mismatches(bug: Bug, workload: Workload) -> list[str]:
    """How the workload's setup fails to be the one the row names: its kind, and for a setup
    with more (`setups.EXTRAS`), that more made by its program before the setup's sync."""
    if bug.setup and workload.kind != bug.setup:
        return [f"{bug.gen} has the {workload.kind} setup, not {bug.setup}"]
    has = workload.made
    made = {"links": (f"links to {FOO}", link_loop(has.links, str)[-1] if has.links else None),
            "xattrs": (f"xattrs on {FOO}", xattr_loop(has.xattrs, str, GUEST.setxattr)[-1] if has.xattrs else None),
            "quota": ("quotas", QUOTA.format(root=GUEST.subvolume)),
            "fifo": (f"fifo at {FOO}", f"mkfifo {FOO}" if has.fifo else None)}
    if workload.extra not in made:
        return []
    what, line = made[workload.extra]
    lines = program(workload).splitlines()
    if line not in lines or "sync" not in lines[lines.index(line):lines.index("pp_acked 0")]:
        return [f"{bug.gen}: its program makes no {what} before the setup's sync"]
    return []


def program_mismatches(workload: Workload) -> list[str]:
    """The lines each step owes the program (its comment, its command, its persistence point's
    command), looked for in order."""
    lines, at, point, wrong = program(workload).splitlines(), 0, 0, []
    for i, step in enumerate(workload.steps, 1):
        wanted = [f"# {i}: {step.op.text()}", step_command(workload, i)]
        if step.persist:
            point += 1
            command = persist_command(step.persist)
            said = f"point {point}: {step.persist.text()}"
            wanted.append(f"{command}  # {said}" if command else f"# {said}, done by the command above")
        for line in wanted:
            found = next((j for j in range(at, len(lines)) if lines[j] == line), None)
            if found is None:
                wrong.append(f"{workload.ident}: step {i} lacks {line!r} in its program")
                break
            at = found + 1
    return wrong


def renumbered(text: str, bugs) -> tuple[str, list[tuple[str, str]]]:
    """The table's text with each listed id (`gen`, `near`) replaced by the id its steps have
    now, and the (old, new) pairs: after a table of operations is added before another, the
    later table's ids move, and the steps say which workload each row means. Each is looked for
    in the space of its id: its seq's, or its shape's."""
    moves = {}
    for bug in bugs:
        if bug.gen and bug.steps:
            space = space_of(bug.gen)
            now = space.workload(space.locate(bug.steps)).ident
            if now != bug.gen:
                moves[bug.gen] = now
    out = re.sub(r'^(gen|near) = "([^"]+)"', lambda m: f'{m[1]} = "{moves.get(m[2], m[2])}"', text, flags=re.M)
    return out, sorted(moves.items())


def need_counts(bugs) -> list[tuple[str, int, int]]:
    """(need, the bugs it alone stands between and the generator, the bugs that need it), the
    most first."""
    alone = Counter(b.needs[0] for b in bugs if len(b.needs) == 1)
    among = Counter(n for b in bugs for n in b.needs)
    return sorted(((n, alone[n], among[n]) for n in among), key=lambda t: (-t[1], -t[2], t[0]))

