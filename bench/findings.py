"""How findings group a hunt's failures, on modelled states (no VM): the btrfs rename bug of
docs/findings/btrfs-rename-both-names.md applied by hand to every seq-2 workload that moves a file to
the other directory and then fsyncs the new one (the old name left on the inode at that
point), each tree judged by the real oracle under the btrfs rules, the journal lines made by
`workload_line`, then grouped by `findings`.

    .venv/bin/python bench/findings.py [--sample 144] [--seed 1]

Prints, for all of them and for a seeded sample (as many as a 2,000-workload hunt holds),
the failing workloads, the findings and families, and the biggest of each. Run by hand; the
figures are in docs/hunt-results.md#findings-on-a-real-hunt.
"""

import argparse
import random

from plugpull.generate.judge import judge
from plugpull.generate.space import Space
from plugpull.hunt.findings import families, findings
from plugpull.hunt.summary import workload_line
from plugpull.results import StateResult


def moves(space: Space):
    """(workload, step index) of each move to the other directory followed by an fsync of the new one."""
    for w in space.workloads():
        for i, s in enumerate(w.steps):
            op = s.op
            if op.family == "rename" and op.variant in ("file", "over") and op.args[0][0] != op.args[1][0] \
                    and s.persist and s.persist.kind == "fsync" and s.persist.path == op.args[1][0]:
                yield w, i
                break


def modelled_line(w, i: int) -> dict:
    src, dst = w.steps[i].op.args
    tree = w.trees[i + 1].copy()
    tree.paths[src] = tree.paths[dst]
    found = judge(w, "btrfs", sum(1 for s in w.steps[:i + 1] if s.persist), tree.view())
    state = StateResult(fs="btrfs", mode="barrier", workload=f"gen:{w.ident}", model="prefix", seed=1, cut=0,
                        verdict=str(found.verdict), reason="", acks_required=1, acks_lost=len(found.lost), fsck_rc=0,
                        lost=[{"ack": a, "reason": r} for a, r in found.lost], broken=list(found.broken), distinct=0)
    return workload_line(w.ident, w.text(), [state], None, 0.0)


def report(name: str, lines: list[dict]) -> None:
    found = findings(lines)
    groups = families(found)
    print(f"{name}: {len(lines)} failing workloads, {len(found)} findings in {len(groups)} families")
    for f in found[:3]:
        print(f"  finding of {f.count}: {f.signature.text()}")
    print("  biggest families:", ", ".join(str(sum(f.count for f in g)) for g in groups[:3]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=144)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    lines = [line for line in (modelled_line(w, i) for w, i in moves(Space(2))) if line["failing"]]
    report("all", lines)
    rng = random.Random(args.seed)
    report(f"a sample of {args.sample} (seed {args.seed})", rng.sample(lines, min(args.sample, len(lines))))


if __name__ == "__main__":
    main()
