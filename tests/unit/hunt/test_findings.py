"""Findings: a hunt's failing workloads grouped by what they lost, under which rules, after
which operations, whatever the names. The lines are judged by the real oracle on trees that
model what btrfs gave in the seq-2 hunt of docs/hunt-results.md; no VM."""

import json
import random
import re
from dataclasses import replace

import pytest

from plugpull.generate.judge import judge
from plugpull.generate.space import Space, workload_of
from plugpull.hunt.findings import Hunt, across, families, fact_damage, findings, invariant_damage, line_damage, \
    shape, signature, steps, up_to_point
from plugpull.hunt.summary import summary, workload_line
from plugpull.results import StateResult

SETTINGS = {"seq": 2, "ops": [], "sample": 2000, "seed": 1, "fs": "btrfs", "mode": "barrier", "disk_mib": 128,
            "kernel": "6.1.0-56-amd64", "models": ["prefix"], "cuts": "x"}
LINK_UNLINK = "link A/foo B/bar; unlink A/foo, fsync A"
SYMLINK_RENAME = "symlink A/foo, fsync A; rename.file A/foo A/bar, fsync A"


def result(verdict: str, lost=(), broken=(), distinct: int = 0) -> StateResult:
    return StateResult(fs="btrfs", mode="barrier", workload="gen:x", model="prefix", seed=1, cut=3, verdict=verdict,
                       reason=f"{verdict} here", acks_required=1, acks_lost=len(lost), fsck_rc=0, lost=list(lost),
                       broken=list(broken), distinct=distinct)


def judged_line(workload, k: int, tree, artifact: str | None = None) -> dict:
    """The journal line of `workload` with one clean state and one whose recovered tree is
    `tree`, owing points 0..k, judged by the btrfs rules."""
    found = judge(workload, "btrfs", k, tree.view())
    bad = result(str(found.verdict), [{"ack": a, "reason": r} for a, r in found.lost], found.broken, 1)
    return workload_line(workload.ident, workload.text(), [result("clean"), bad], artifact, 1.0)


def both_names(workload) -> dict:
    """The rename of the step followed by an fsync of the new directory half done: the old
    name still on the inode (docs/findings/btrfs-rename-both-names.md)."""
    i = next(i for i, s in enumerate(workload.steps) if s.op.family == "rename" and s.persist)
    src, dst = workload.steps[i].op.args
    tree = workload.trees[i + 1].copy()
    tree.paths[src] = tree.paths[dst]
    return judged_line(workload, sum(1 for s in workload.steps[:i + 1] if s.persist), tree)


def link_unlink() -> dict:
    """The file under neither name after link, unlink and the fsync of the old directory."""
    w = workload_of(LINK_UNLINK)
    tree = w.trees[2].copy()
    del tree.paths["B/bar"]
    return judged_line(w, 1, tree)


def symlink_rename() -> dict:
    """The symlink's rename lost after the second fsync of its directory."""
    w = workload_of(SYMLINK_RENAME)
    return judged_line(w, 2, w.trees[1])


def moves_with_a_data_step(count: int) -> list:
    """Seq-2 workloads that move a file to the other directory, fsync the new one, and change
    some file's data or xattrs before or after (the renamed one or another): `count` of them."""
    data = ("write", "falloc", "truncate", "setxattr")
    space, picked = Space(2, families=("rename", *data)), []  # the listing of those in the whole space's order
    for w in space.workloads():
        kinds = [(s.op.family, s.op.variant) for s in w.steps]
        move = [s for s in w.steps if s.op.family == "rename" and s.op.variant == "file"
                and s.op.args[0][0] != s.op.args[1][0] and s.persist and s.persist.path == s.op.args[1][0]]
        if move and any(f in data for f, _ in kinds):
            picked.append(w)
    return random.Random(1).sample(picked, count)


@pytest.fixture(scope="module")
def btrfs_lines() -> list[dict]:
    return [both_names(w) for w in moves_with_a_data_step(129)] + [link_unlink(), symlink_rename()]


def test_the_131_failing_workloads_of_the_btrfs_hunt_are_its_3_findings(btrfs_lines):
    found = findings(btrfs_lines, SETTINGS)
    assert [f.count for f in found] == [129, 1, 1]
    rename, *others = found
    assert rename.signature.shape == "rename X/f Y/g, fsync Y"
    assert rename.signature.kinds == ("two-names",) and rename.signature.rules == ("inconsistent",)
    assert len({line["ops"] for line in (m.line for m in rename.workloads)}) == 129
    shapes = {f.signature.shape: f.signature for f in others}
    assert shapes["link X/f Y/g; unlink X/f, fsync X"].kinds == ("missing",)
    assert shapes["link X/f Y/g; unlink X/f, fsync X"].rules == ("sync-all",)
    assert shapes["symlink X/f, fsync X; rename X/f X/g, fsync X"].kinds == ("missing", "still-there")
    assert rename.kernels == ["6.1.0-56-amd64"] and rename.filesystems == ["btrfs"]


def test_a_journal_line_carries_what_its_failing_states_lost():
    line = link_unlink()
    assert line["lost_kinds"] == ["missing"] and line["lost_names"] == ["A/foo", "B/bar"]
    clean = workload_line("seq1-000001", "mkdir A, sync", [result("clean")], None, 1.0)
    assert clean["lost_kinds"] == [] and clean["lost_names"] == []


@pytest.mark.parametrize("ops, other", [
    ("rename.file A/foo B/foo, fsync B", "rename.file B/bar A/foo, fsync A"),
    ("rename.file A/bar B/bar, fsync B", "write.append B/foo, sync; rename.file B/bar A/bar, fsync A"),
    ("rename.file A/foo B/bar, fsync B", "rename.file A/foo B/bar, fsync B; write.overwrite B/bar, fsync B/bar"),
    ("rename.file A/foo B/foo, fsync B", "rename.over A/foo B/foo, fsync B"),  # to a free name or over a file
    # the move back comes after the point at which the states failed: it had not run
    ("rename.file A/foo B/foo, fsync B", "rename.file A/foo B/foo, fsync B; rename.file B/foo A/foo, fsync A"),
])
def test_two_workloads_that_differ_in_names_or_a_data_step_collide(ops, other):
    assert signature(both_names(workload_of(ops))) == signature(both_names(workload_of(other)))


@pytest.mark.parametrize("ops, other", [
    ("rename.file A/foo B/foo, fsync B", "rename.file A/foo B/foo, sync"),  # another kind of point
    ("rename.file A/foo B/foo, fsync B", "rename.file A/foo B/foo, fsync B/foo"),  # another point
    ("rename.file A/foo B/foo, fsync B", "creat A/foo; rename.file A/foo B/foo, fsync B"),  # a new file
    ("rename.file A/foo B/foo, fsync B", "link A/foo A/bar; rename.file A/foo B/foo, fsync B"),  # a second link
])
def test_workloads_that_differ_in_what_the_failure_is_about_do_not(ops, other):
    assert signature(both_names(workload_of(ops))) != signature(both_names(workload_of(other)))


def test_another_rule_or_another_kind_is_another_finding():
    line = both_names(workload_of("rename.file A/foo B/foo, fsync B"))
    assert signature({**line, "first_rules": ["fsync-names"]}) != signature(line)
    assert signature({**line, "lost_kinds": ["nlink"]}) != signature(line)
    assert len(findings([line, {**line, "id": "x", "first_rules": ["fsck"]}])) == 2
    older = {k: v for k, v in line.items() if k != "first_rules"}  # a line from before first_rules
    assert signature({**older, "rules": {"fsync-names": 1}}) != signature(older)


def test_a_rule_broken_only_at_a_later_point_is_the_same_finding():
    """The btrfs link-unlink hunt: one workload of a family had one more failing state, at a
    later point, that broke another rule besides; it must not make a finding of its own."""
    w = workload_of(LINK_UNLINK)
    tree = w.trees[2].copy()
    del tree.paths["B/bar"]
    found = judge(w, "btrfs", 1, tree.view())
    lost = [{"ack": a, "reason": r} for a, r in found.lost]
    at_first = result(str(found.verdict), lost, found.broken, 1)
    again = [{"ack": 2, "reason": re.sub(r"\([a-z0-9-]+, point \d+\)", "(fsync-names, point 2)", f["reason"])}
             for f in lost]
    later = replace(result("data-loss", again, (), 2), acks_required=2)
    one = workload_line(w.ident, w.text(), [result("clean"), at_first], None, 1.0)
    two = workload_line("seq2-other", w.text(), [result("clean"), at_first, later], None, 1.0)
    assert set(two["rules"]) == set(one["rules"]) | {"fsync-names"} and two["first_rules"] == one["first_rules"]
    assert signature(two) == signature(one) and len(findings([one, two])) == 1
    assert signature(one).rules == ("sync-all",)
    earlier = replace(later, acks_required=0)
    three = workload_line("seq2-third", w.text(), [result("clean"), at_first, earlier], None, 1.0)
    assert three["first_point"] == 0 and signature(three) != signature(one)


def test_a_check_without_names_keeps_every_step_and_its_kind():
    line = {"id": "seq2-000001", "ops": "write.append A/foo, sync; creat B/bar, fsync B", "failing": True,
            "rules": {"fsck": 2}, "lost_kinds": ["fsck"], "lost_names": []}
    assert signature(line).shape == "write.append X/f, sync; creat Y/g, fsync Y"
    assert shape("write.append A/foo, sync; creat B/bar, fsync B", ["B/bar"]) == "creat X/f, fsync X"


def test_a_file_moved_with_its_directory_keeps_the_directory_s_rename_in_the_core():
    assert shape("rename.dir A B, fsync .; write.append B/foo, sync", ["B/foo"]) == \
        "rename.dir X Y, fsync .; write.append Y/f, sync"
    assert shape("rename.file A/foo A/bar, fsync A", ["B/foo"]) == "rename X/f X/g, fsync X"  # names none


TWO_MOVES = "rename.file A/foo B/foo, fsync B; rename.file A/bar B/bar, fsync B"


@pytest.mark.parametrize("point, names, kept", [
    (1, ["A/foo", "B/foo"], 1),  # the failure is about the first step alone
    (1, ["A/bar", "B/bar"], 2),  # its names are the second step's, which was under way
    (2, ["A/foo", "B/foo"], 2),
    (None, ["A/foo"], 2),
])
def test_the_steps_after_the_first_failing_point_and_the_next_are_not_the_failures(point, names, kept):
    assert up_to_point(steps(TWO_MOVES), point, names) == steps(TWO_MOVES)[:kept]


def test_the_representative_is_the_smallest_workload():
    texts = ["write.append A/bar, sync; rename.file A/foo B/foo, fsync B", "rename.file B/bar A/bar, fsync A",
             "rename.file A/foo B/foo, fsync B", "rename.file A/foo B/bar, fsync B; setxattr B/bar, sync"]
    lines = [both_names(workload_of(t)) for t in texts]
    [found] = findings(lines)
    ids = sorted(line["id"] for line in lines[1:3])  # one operation, as long a text: the lower id
    assert found.representative.line["id"] == ids[0]
    assert [m.line["ops"] for m in found.workloads][2:] == [texts[3], texts[0]]  # then the longer ones


@pytest.mark.parametrize("reason, kind, names", [
    ("A/foo: kind is absent, owed file (fsync-names, point 1)", "missing", ("A/foo",)),
    ("A/foo: kind is file, owed absent (fsync-dir-entries, point 1)", "still-there", ("A/foo",)),
    ("A/foo: kind is dir, owed file (sync-all, point 1)", "kind", ("A/foo",)),
    ("A/bar: nlink is 2, owed 1 or absent (sync-all, point 0)", "nlink", ("A/bar",)),
    ("A/foo: digest is 1234, owed 5678 (fsync-data, point 1)", "contents", ("A/foo",)),
    ("A/foo: size is 0, owed 4096 (fsync-data, point 1)", "size", ("A/foo",)),
    ("A/foo: xattrs is (), owed (('user.pp', 'v1'),) (fsync-xattrs, point 1)", "xattr", ("A/foo",)),
    ("A/foo: target is foo, owed bar (sync-all, point 1)", "target", ("A/foo",)),
    ("the work directory is missing", "lost", ()),
])
def test_each_lost_fact_names_its_kind(reason, kind, names):
    assert fact_damage(reason) == (kind, names)


def test_each_broken_invariant_names_its_kind():
    assert invariant_damage("A/bar and B/bar are one inode, which no point of the workload gives") == (
        "two-names", ("A/bar", "B/bar"))
    assert invariant_damage("B/foo is a dir, which no point of the workload has there") == ("kind", ("B/foo",))
    assert invariant_damage("A/zzz is a name no point of the workload has") == ("stray", ("A/zzz",))
    assert invariant_damage("something else") == ("inconsistent", ())


def test_an_older_line_gets_its_kinds_from_its_saved_states_else_from_its_reason(tmp_path):
    line = link_unlink()
    old = {k: v for k, v in line.items() if k not in ("lost_kinds", "lost_names")}
    state = tmp_path / "failing" / old["id"] / "states" / "prefix-cut9"
    state.mkdir(parents=True)
    lost = [{"ack": 0, "reason": "the file owed at A/foo is under none of A/foo, B/bar (sync-all, point 0)"}]
    (state / "state.json").write_text(json.dumps({"verdict": "data-loss", "lost": lost, "broken": []}))
    assert line_damage(old) == {"lost_kinds": ["lost"], "lost_names": []}  # the rules alone
    with_artifact = {**old, "artifact": f"failing/{old['id']}"}
    assert line_damage(with_artifact, tmp_path) == {"lost_kinds": ["missing"], "lost_names": ["A/foo", "B/bar"]}
    assert signature(with_artifact, tmp_path) == signature(line)
    rename = both_names(workload_of("rename.file A/foo B/foo, fsync B"))
    bare = {k: v for k, v in rename.items() if k not in ("lost_kinds", "lost_names")}
    bare["reason"] = "invariant broken: A/foo and B/foo are one inode, which no point of the workload gives"
    assert signature(bare) == signature(rename)


def test_findings_across_hunts_count_each_hunt_and_name_their_kernels(btrfs_lines):
    other = {**SETTINGS, "kernel": "7.3.4+deb13-amd64"}
    found = across([Hunt(None, SETTINGS, btrfs_lines), Hunt(None, other, btrfs_lines[:10] + btrfs_lines[-1:])])
    assert [(f.count_in(0), f.count_in(1)) for f in found] == [(129, 10), (1, 1), (1, 0)]
    assert found[0].kernels == ["6.1.0-56-amd64", "7.3.4+deb13-amd64"] and found[2].kernels == ["6.1.0-56-amd64"]


def test_a_family_holds_the_findings_that_differ_in_the_names_they_create():
    plain = both_names(workload_of("rename.file A/foo B/foo, fsync B"))
    new = both_names(workload_of("creat A/foo; rename.file A/foo B/foo, fsync B"))
    link = link_unlink()
    found = findings([plain, new, {**plain, "id": "seq1-999999"}, link])
    assert [f.count for f in found] == [2, 1, 1]
    assert [[f.count for f in group] for group in families(found)] == [[2, 1], [1]]
    assert families(found)[0][1].signature.shape == "creat X/f; rename X/f Y/g, fsync Y"
    text = summary(SETTINGS, [plain, new, {**plain, "id": "seq1-999999"}, link], 4)
    assert text.count("  family 1 (2 findings): rename X/f Y/g, fsync Y, the same damage, other names made first") == 2
    assert "family 2" not in text  # a family of one finding is not named


def test_the_summary_lists_the_findings_biggest_first_with_their_workloads(btrfs_lines):
    renames = sorted(btrfs_lines[:2], key=lambda line: (len(line["ops"]), line["id"]))
    text = summary(SETTINGS, renames + btrfs_lines[-2:] + [{**btrfs_lines[2], "failing": False}], 2000)
    lines = text.splitlines()
    assert lines[0] == ("hunt: seq 2 (sample 2000 seed 1) on btrfs (barrier), kernel 6.1.0-56-amd64: "
                        "5 of 2000 workloads, 10 states (10 distinct), 4 failing")
    assert lines[1] == "verdicts: clean 5, data-loss 2, inconsistent 3"
    assert lines[2] == "findings: 3 from 4 failing workloads (by rule: inconsistent 2, fsync-dir-entries 1, sync-all 1)"
    assert lines[3:9] == [
        "finding 1: 2 workloads: rename X/f Y/g, fsync Y",
        "  what: two names on one inode (two-names)",
        "  rules: inconsistent",
        "  on: btrfs, kernel 6.1.0-56-amd64",
        f"  smallest: {renames[0]['id']}  {renames[0]['ops']}",
        f"    {renames[0]['id']}  {renames[0]['ops']}  (1 of 2 states)"]
    assert [line for line in lines if line.startswith("finding ")][1:] == [  # as many: by their shapes' text
        "finding 2: 1 workload: link X/f Y/g; unlink X/f, fsync X",
        "finding 3: 1 workload: symlink X/f, fsync X; rename X/f X/g, fsync X"]
    assert btrfs_lines[2]["id"] not in text
