"""The many-links setup (`--setup links`, ids `seqNl-...`): the synced space's workloads with
A/foo given 3,000 more links in A before the sync; the model owes the names and the link count,
the guest's loop makes them, the judge compares them, and a model that forgets either is caught."""

import os
import subprocess
from dataclasses import replace

import pytest

from tests.cli_run import run_cli
from plugpull.generate.judge import judge
from plugpull.generate.oracle import held, on_profile
from plugpull.generate.setups import MANY, NOTHING, link_loop, link_names
from plugpull.generate.program import program
from plugpull.generate.space import Space, shape_space, space_of, steps_of, whole_space
from plugpull.generate.tree import FILE, Blocks, Entry
from plugpull.generate.workload import collected
from plugpull.check.verdict import Verdict

GENERIC_040 = "link A/foo A/bar, fsync A/foo"  # generic/040 after its setup: link foo foo_link_3001; fsync foo


def linked(text: str = GENERIC_040):
    index = whole_space(1).locate(steps_of(text))
    return space_of(f"seq1l-{index:06d}").parse(f"seq1l-{index:06d}")


@pytest.fixture(autouse=True)
def kept_models_dropped_after():
    yield
    forget_kept_models()


def forget_kept_models():
    """The oracle keeps a workload's model by its value: a test that changes the model drops it."""
    on_profile.cache_clear()


def test_the_links_space_is_the_synced_one_with_its_own_ids():
    synced, many = Space(1), Space(1, extra="links")
    assert many.count() == synced.count() == 1488
    assert Space(2, extra="links").count() == 3249207
    for index in (0, 131, 1379):
        a, b = synced.workload(index), many.workload(index)
        assert a.steps == b.steps and a.setup == b.setup and b.synced
        assert b.ident == f"seq1l-{index:06d}" and a.ident == f"seq1-{index:06d}"
    assert shape_space("links", extra="links").workload(5).ident == "seq6l.links-000005"
    assert space_of("seq6l.links-000005").parse("seq6l.links-000005").extra == "links"


def test_an_id_of_another_setup_is_refused():
    with pytest.raises(Exception, match="not of --setup links"):
        Space(1, extra="links").parse("seq1-000131")
    with pytest.raises(Exception, match="not of --setup synced"):
        Space(1).parse("seq1l-000131")
    with pytest.raises(Exception, match="bad workload id"):
        space_of("seq1ul-000131")


def test_the_setup_tree_holds_the_links_and_the_count():
    workload = linked()
    first, last = workload.trees[0], workload.trees[-1]
    assert workload.made.links == MANY == 3000
    ino = first.paths["A/foo"]
    assert first.names_of(ino) == ("A/foo", *link_names(MANY))
    assert first.nlink("A/foo") == 3001 and last.nlink("A/foo_link_3000") == 3002
    assert last.names()[:4] == ("A", "A/foo", "A/bar", "A/foo_link_1")


def test_no_links_where_the_setup_does_not_make_a_foo_or_a_step_is_invalid_with_them():
    creating = linked("creat A/foo, fsync A/foo")
    assert creating.made.links == 0 and "A/foo_link_1" not in creating.trees[-1].paths
    index = whole_space(1).locate(steps_of("unlink-open A/foo, fsync-open A/foo"))
    held = Space(1, extra="links").workload(index)
    assert "A/foo" in held.setup and held.made.links == 0 and "ln " not in program(held)
    index = whole_space(2).locate(steps_of("unlink A/foo; rmdir A, sync"))
    emptied = Space(2, extra="links").workload(index)
    assert "A/foo" in emptied.setup and emptied.made.links == 0 and emptied.trees[-1].kind("A") is None
    index = whole_space(2).locate(steps_of("unlink A/foo; link A/bar B/bar, sync"))
    kept = Space(2, extra="links").workload(index)
    assert kept.made.links == MANY and kept.trees[-1].nlink("A/foo_link_1") == 3000


def test_the_program_makes_the_links_before_the_sync():
    text = program(linked())
    loop = link_loop(MANY, str)[1]
    assert loop in text.splitlines()
    assert text.index(loop) < text.index("\nsync\n") < text.index("pp_acked 0")
    assert "ln A/foo A/bar" in text


def test_the_loop_makes_the_names_the_model_has(tmp_path):
    """The setup's loop, run by sh in a directory, leaves A/foo with the model's names and count."""
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "foo").write_bytes(b"x")
    subprocess.run(["sh", "-ec", "\n".join(link_loop(MANY, str))], cwd=tmp_path, check=True)
    model = linked().trees[0]
    assert sorted(os.listdir(tmp_path / "A")) == sorted(p.split("/")[1] for p in model.names() if "/" in p)
    assert os.stat(tmp_path / "A" / "foo").st_nlink == model.nlink("A/foo") == 3001


def test_the_judge_owes_the_links_and_the_count():
    workload = linked()
    good = workload.trees[-1].view()
    assert judge(workload, "btrfs", 1, good).verdict == Verdict.CLEAN
    lost_name = {p: e for p, e in good.items() if p != "A/foo_link_2999"}
    found = judge(workload, "btrfs", 0, lost_name)
    assert found.verdict == Verdict.DATA_LOSS and "A/foo_link_2999: kind is absent, owed file" in found.reason
    low = {p: replace(e, nlink=3001) if e.kind == FILE else e for p, e in good.items()}
    found = judge(workload, "btrfs", 1, low)
    assert found.verdict == Verdict.DATA_LOSS and "nlink is 3001, owed 3002 (fsync-nlink, point 1)" in found.reason


def test_a_model_that_forgets_the_links_is_caught(monkeypatch):
    """The tree the guest leaves (the links there) judged by a model without them: the count
    is wrong, and the names are ones no point of the workload has."""
    real = linked()
    recovered = real.trees[-1].view()
    monkeypatch.setattr("plugpull.generate.setups.made_for", lambda workload: NOTHING)
    forget_kept_models()
    forgot = replace(real)
    assert forgot.made.links == 0
    found = judge(forgot, "btrfs", 1, recovered)
    assert found.verdict != Verdict.CLEAN
    assert any("nlink is 3002, owed 2" in why for _, why in found.lost)


def test_a_model_that_counts_only_the_fixed_names_is_caught(monkeypatch):
    workload = linked()
    recovered = workload.trees[-1].view()
    monkeypatch.setattr("plugpull.generate.tree.Tree.nlink", lambda tree, path: 2)
    forget_kept_models()
    found = judge(replace(workload), "btrfs", 1, recovered)
    assert found.verdict == Verdict.DATA_LOSS and "nlink is 3002, owed 2" in found.reason


def test_a_file_recovered_on_the_links_inode_is_inconsistent_once():
    """B/foo, another file, on the inode of A/foo and its links: a half-done rename, said of
    A/foo (which the setup made before the links) and of the first link, not of each of 3,000."""
    workload = space_of("seq1l-000776").parse("seq1l-000776")
    assert workload.text() == "reflink.file A/foo B/foo, sync" and workload.made.links == MANY
    recovered = dict(workload.trees[-1].view())
    assert judge(workload, "btrfs", 1, recovered).verdict == Verdict.CLEAN
    recovered["B/foo"] = replace(recovered["B/foo"], ino=recovered["A/foo"].ino)
    found = judge(workload, "btrfs", None, recovered)
    assert found.verdict == Verdict.INCONSISTENT
    assert [why.split(" are one inode")[0] for why in found.broken] == ["A/foo and B/foo", "B/foo and A/foo_link_1"]


def test_the_walk_takes_the_links_as_names_of_the_workload():
    line = "entry A/foo_link_7 81a4 16384 3001 12 " + "0" * 64 + " -"
    assert collected(line)[1] == ["A/foo_link_7"]
    tree, strays = collected(line, frozenset(["A/foo_link_7"]))
    assert strays == [] and tree["A/foo_link_7"] == Entry(FILE, 16384, "0" * 64, 3001, (), None, 12, Blocks())


def test_the_cli_takes_the_setup(capsys):
    assert run_cli(["generate", "--seq", "1", "--setup", "links"], capsys)[1] == "seq 1: 1488 workloads of 1488\n"
    code, out, _ = run_cli(["generate", "--show", "seq1l-000131"], capsys)
    assert code == 0 and out == program(linked()) and "A/foo_link_" in out
    code, out, _ = run_cli(["generate", "--seq", "1", "--setup", "links", "--list", "--ops", "link,fsync"], capsys)
    assert code == 0 and out.splitlines()[0].startswith("seq1l-")
    code, _, err = run_cli(["generate", "--seq", "1", "--setup", "many"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_a_moved_directory_of_links_is_held_once_and_judged():
    """`rename.dir A B, sync`: the 3,000 links move with A; what the setup's sync owed of them is
    held under their names in A or in B, one held file for the inode, not one per link."""
    workload = space_of("seq1l-000338").parse("seq1l-000338")
    assert workload.text() == "rename.dir A B, sync" and workload.made.links == MANY
    kept = held(workload, "btrfs", 0)
    linked_file = [h for h in kept if "A/foo_link_1" in h.names]
    assert len(linked_file) == 1 and len(linked_file[0].names) == 2 * 3001 and "B/foo_link_3000" in linked_file[0].names
    assert judge(workload, "btrfs", 1, workload.trees[-1].view()).verdict == Verdict.CLEAN
    gone = {p: e for p, e in workload.trees[-1].view().items() if not p.startswith("B/foo")}
    found = judge(workload, "btrfs", 0, gone)
    assert found.verdict == Verdict.DATA_LOSS and any("is under none of A/foo" in why for _, why in found.lost)
