"""The oracle on trees real kernels gave: crash states of generated workloads recorded on ext4,
xfs and btrfs with barriers (`tests/record_real_states.py`, the host's 6.1; the data file says
what ran). Judged again here, each must come out as it did when it was recorded: clean, or
failing as one of the known btrfs findings does. A rule that owes more than a filesystem gives
fails the first; one that owes less fails the second. No guest."""

import gzip
import json
from collections import Counter
from dataclasses import replace

import pytest

from plugpull.check.checker import TREE
from plugpull.generate import oracle
from plugpull.generate.oracle import DATA, RULES, fact
from plugpull.generate.space import space_of
from plugpull.generate.tree import FILE, parent
from plugpull.generate.workload import GeneratedWorkload
from plugpull.paths import ROOT

DATA_FILE = ROOT / "tests" / "data" / "real-states.jsonl.gz"
# the workloads whose recorded states may fail: btrfs findings (docs/findings.md, docs/hunt-results.md)
KNOWN_FAILING = {
    ("btrfs", "seq2-056383"): "link into B, unlink from A, fsync A: the file under neither name",
    ("btrfs", "seq2-055855"): "the same, with an fsync of A after the link",
    ("btrfs", "seq2-080435"): "a renamed symlink keeps its old name (generic/779)",
    ("btrfs", "seq1-000253"): "a file moved to B, fsync B: both names after log replay",
    ("btrfs", "seq1-000272"): "the same, B/bar moved to A/foo, fsync A",
    ("btrfs", "seq1-000295"): "the same, moved over a file: A/foo over B/bar, fsync B",
    ("btrfs", "seq1-000304"): "the same, A/bar over B/foo, fsync B",
    ("btrfs", "seq1-000333"): "the same, B/bar over A/bar, fsync A",
}


def recorded() -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(DATA_FILE.read_bytes()).decode().splitlines()]


STATES = recorded()


def judged_clean(state: dict) -> bool:
    workload = GeneratedWorkload(state["id"], state["profile"])
    files = {TREE: state["tree"].encode()} if state["present"] else {}
    found = workload.examine(state["required"], files)
    return not found.lost and not found.broken


def test_the_recording_covers_each_filesystem_and_both_verdicts():
    by_fs = Counter(s["fs"] for s in STATES)
    assert all(by_fs[fs] >= 100 for fs in ("ext4", "xfs", "btrfs")), by_fs
    assert sum(not s["clean"] for s in STATES) >= 4
    assert {(s["fs"], s["id"]) for s in STATES if not s["clean"]} <= set(KNOWN_FAILING)


def test_every_recorded_state_is_judged_as_it_was():
    changed = [(s["fs"], s["id"], s["required"], s["clean"]) for s in STATES if judged_clean(s) != s["clean"]]
    assert changed == [], f"{len(changed)} real states judged otherwise now (fs, id, acks owed, clean then)"


def test_every_recorded_workload_still_names_the_same_operations():
    """A change to the generator that renumbers ids would judge these trees against other
    workloads: record them again (tests/record_real_states.py) when this fails."""
    for ident in sorted({s["id"] for s in STATES}):
        assert space_of(ident).parse(ident).ident == ident


def owes_the_renamed_data_even_after_a_write(ctx):
    """ext4-replace-via-rename made too strict: the data a file had when it was renamed over
    another, owed at the directory's fsync even when a later write changed it."""
    out = []
    trees = ctx.inode_history()
    for i in range(1, ctx.step + 1):
        op = ctx.workload.steps[i - 1].op
        if op.family == "rename" and op.variant == "over" and parent(op.args[1]) == ctx.path \
                and trees[i].kind(op.args[1]) == FILE:
            out += [(op.args[1], n, fact(trees[i], op.args[1], n)) for n in DATA]
    return out


def with_rule(name: str, owes) -> tuple:
    return tuple(replace(r, owes=owes) if r.name == name else r for r in RULES)


def test_a_rule_that_owes_more_than_ext4_gives_fails_a_real_state(monkeypatch):
    monkeypatch.setattr(oracle, "RULES", with_rule("ext4-replace-via-rename", owes_the_renamed_data_even_after_a_write))
    now_failing = [s["id"] for s in STATES if s["clean"] and s["fs"] == "ext4" and not judged_clean(s)]
    assert now_failing, "no recorded ext4 state has a write after a rename over a file"


@pytest.mark.parametrize("rule", ["sync-all", "fsync-dir-entries"])
def test_a_rule_that_owes_nothing_passes_a_real_state_it_failed(rule, monkeypatch):
    monkeypatch.setattr(oracle, "RULES", with_rule(rule, lambda ctx: []))
    if rule == "sync-all":
        monkeypatch.setattr(oracle, "sync_all", lambda ctx: [])  # the setup's sync, point 0
    now_clean = [s["id"] for s in STATES if not s["clean"] and judged_clean(s)]
    assert now_clean, f"no recorded failing state needs {rule} to fail"
