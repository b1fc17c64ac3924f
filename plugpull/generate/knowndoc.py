"""docs/known-bugs.md, written from the known-bugs table (`known`): its counts, what the
generator lacks ranked by the bugs it would bring in reach, and the table itself.

`python -m plugpull.generate.knowndoc` writes the doc; `--check` exits 1 when the doc is not
what the table gives; `--renumber` first sets each listed id to the one its steps have now (ids
of a later table move when a table is added before it), then writes the doc."""

import sys
from collections import Counter

from plugpull.errors import UsageError
from plugpull.files import atomic_write
from plugpull.generate.known import DATA, NEEDS, REACHES, Bug, Table, load, need_counts, renumbered
from plugpull.paths import ROOT

DOC = ROOT / "docs" / "known-bugs.md"


def share(n: int, total: int) -> str:
    return f"{n} ({100 * n / total:.0f}%)" if total else "0"


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def head(table: Table) -> list[str]:
    src, bugs = table.source, table.bugs
    found = len(table.excluded) + len(table.unnamed) + len(bugs)
    by_fs = ", ".join(f"{fs} {n}" for fs, n in Counter(b.fs for b in bugs).most_common())
    named = Counter(b.named_in for b in bugs)
    fixes = {s: i for b in bugs for i, s in b.fixes}
    where = ", ".join(d.removeprefix("tests/") for d in src["directories"])
    helpers = " or ".join(f"`{m}`" for m in src["match"])
    return [
        "# Known bugs: the crash bugs fstests knows, against the generated space", "",
        "*Which crash bugs that fstests guards against can `plugpull generate` express, and what does it lack "
        "for the others?*", "",
        f"The source is fstests ({src['repository']}) at commit `{src['commit'][:12]}`, its newest commit of "
        f"{src['date']}. In its {where} tests, {found} call {helpers}; {len(table.excluded)} of them simulate no "
        f"power loss ([below](#not-counted)), so {found - len(table.excluded)} simulate one, and {len(bugs)} of "
        f"those name the kernel fix of the bug they guard ({named['test']} in the test, {named['commit']} only in "
        f"the fstests commit that added it): {by_fs}. {len(table.unnamed)} name no fix.", "",
        f"Each bug's workload is read against the generator's operations and persistence points of {src['read']} "
        "([generate.md](generate.md)): **expressible** names the workload (`gen:ID`) that performs the test's "
        "steps in the generator's names (`A`, `B`, `A/foo`, ...; a setup synced or not, `seqNu-` ids, or with "
        "thousands of links to A/foo, `seqNl-` ids, 2,000 xattrs on it, `seqNx-`, btrfs quotas, `seqNq-`, A/foo a "
        "fifo, `seqNf-`; four to six "
        "operations in a named shape, `seqN.SHAPE-` ids, [shapes](generate.md#shapes-longer-workloads); on a feature "
        "profile where the test's mkfs or mount options need one, [features.md](features.md)); **one step "
        "off** names the nearest workload and the one step the generator lacks (an operation of another size, a "
        "ranged msync); **out of reach** names what is missing. Ids that are the same workload as the test up "
        "to names the test does not depend on say where they differ.", "",
        f"Of the {len(fixes)} fixes named, {sum(1 for i in fixes.values() if i)} carry a commit id: fstests' own "
        "where it gives one, else as later kernel commits and the stable list cite the fix by id and subject; "
        "the others are named by their subject alone, as fstests names them.", "",
        f"This page is written by `python -m plugpull.generate.knowndoc` from `{DATA.relative_to(ROOT)}` (with "
        "`--renumber`, each listed id is first set to the one its steps have now: a table of operations added "
        "before another moves the later one's ids); "
        "`tests/unit/generate/test_known_table.py` checks that it is what the data gives, and that each listed "
        "id's guest program performs the table's steps, operation by operation and point by point.", "",
    ]


def counts(bugs: tuple[Bug, ...]) -> list[str]:
    reach = Counter(b.reach for b in bugs)
    lines = ["## How many", "", "| reach | bugs |", "|---|---|"]
    lines += [f"| {r} | {share(reach[r], len(bugs))} |" for r in REACHES]
    lines += ["", "What the generator lacks, by the bugs it alone keeps out of reach (it is their only need) and "
              "by all the bugs that need it, alone or as one of several:", "",
              "| need | alone | in all | what |", "|---|---|---|---|"]
    lines += [f"| `{n}` | {alone} | {among} | {NEEDS[n]} |" for n, alone, among in need_counts(bugs)]
    return lines + [""]


def fix_cell(bug: Bug) -> str:
    return "; ".join(f"`{i}` {cell(s)}" if i else cell(s) for i, s in bug.fixes)


def reach_cell(bug: Bug) -> str:
    needs = ", ".join(f"`{n}`" for n in bug.needs)
    if bug.reach == "expressible":
        text = bug.on
    elif bug.reach == "one step off":
        text = f"one step off ({needs}): {bug.off}; nearest `gen:{bug.gen}`"
    else:
        text = f"out of reach: {needs}"
    return cell(text + (f"; {bug.note}" if bug.note else ""))


def rows(bugs: tuple[Bug, ...]) -> list[str]:
    lines = ["## The table", "", "| test | workload | fix | plugpull |", "|---|---|---|---|"]
    lines += [f"| {b.test} | {cell(b.workload)} | {fix_cell(b)} | {reach_cell(b)} |" for b in bugs]
    return lines + [""]


def expressible(bugs: tuple[Bug, ...]) -> list[str]:
    lines = ["## The expressible ones", ""]
    for b in bugs:
        if b.reach == "expressible":
            lines.append(f"- {b.test}: {b.on}, `{'; '.join(s.text() for s in b.steps)}`")
    return lines + [""]


def not_counted(table: Table) -> list[str]:
    lines = ["## Not counted", "", "Power-loss tests that name no fix:", ""]
    lines += [f"- {u['test']}: {u['what']}" for u in table.unnamed]
    lines += ["", "Tests that use the same device-mapper targets but simulate no power loss:", ""]
    lines += [f"- {e['test']}: {e['why']}" for e in table.excluded]
    return lines + [""]


def render(table: Table) -> str:
    bugs = table.bugs
    return "\n".join(head(table) + counts(bugs) + expressible(bugs) + rows(bugs) + not_counted(table))


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"], ["--renumber"]):
        print("usage: python -m plugpull.generate.knowndoc [--check | --renumber]", file=sys.stderr)
        return 2
    try:
        if argv == ["--renumber"]:
            _renumber()
        text = render(load())
    except UsageError as e:
        print(f"plugpull.generate.knowndoc: {e}", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        same = DOC.is_file() and DOC.read_text() == text
        print(f"{DOC.name} is {'' if same else 'not '}what {DATA.name} gives")
        return 0 if same else 1
    atomic_write(DOC, text)
    print(f"wrote {DOC}")
    return 0


def _renumber() -> None:
    text, moves = renumbered(DATA.read_text(), load().bugs)
    for old, new in moves:
        print(f"{old} -> {new}")
    if moves:
        atomic_write(DATA, text)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
