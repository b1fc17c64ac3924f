"""The fifo setup (`--setup fifo`, ids `seqNf-...`): the synced space's workloads with A/foo a
fifo instead of a regular file, where every step is valid with one (renames, links, unlinks,
and no point that names it); the guest never opens it; the model owes its kind and link count,
pp-tree's walk reads it as a fifo, and a state where it came back a regular file, or a model
that forgot it, is caught. No VM."""

import os
from dataclasses import replace

import pytest
from tests.cli_run import run_cli
from tests.unit.generate.test_generate_fourth import GENERIC_479
from tests.unit.generate.test_generate_later import host_tools, program_leaves_its_tree  # noqa: F401
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean

from plugpull.check.verdict import Verdict
from plugpull.generate import setups
from plugpull.generate.judge import judge
from plugpull.generate.oracle import LINUX, on_profile
from plugpull.generate.program import program, step_command
from plugpull.generate.space import Space, shape_space, space_of, steps_of, whole_space
from plugpull.generate.tree import FIFO, FILE, Entry, digest, read_tree
from plugpull.generate.workload import collected

LINKED_SYNCED = "link A/foo A/bar, sync"


def fifo(text: str):
    seq = len(steps_of(text))
    index = whole_space(seq).locate(steps_of(text))
    return space_of(f"seq{seq}f-{index:06d}").parse(f"seq{seq}f-{index:06d}")


def shaped(text: str = GENERIC_479):
    space = shape_space("four-names", extra="fifo")
    return space.workload(space.locate(steps_of(text)))


@pytest.fixture(autouse=True)
def kept_models_dropped_after():
    yield
    on_profile.cache_clear()


def test_the_fifo_space_is_the_synced_one_with_its_own_ids():
    synced, made = Space(1), Space(1, extra="fifo")
    assert made.count() == synced.count() == 1488
    workload = fifo(LINKED_SYNCED)
    assert workload.ident == "seq1f-000130" and workload.made.fifo and workload.kind == "fifo"
    assert workload.steps == synced.workload(130).steps and workload.setup == synced.workload(130).setup
    assert shaped().ident == "seq4f.four-names-209352" and shaped().made.fifo
    with pytest.raises(Exception, match="not of --setup fifo"):
        made.parse("seq1-000130")


@pytest.mark.parametrize("text", ["write.overwrite A/foo, sync", "link A/foo A/bar, fsync A/foo",
                                  "setxattr A/foo, sync", "truncate A/foo, sync", "unlink-open A/foo, fsync-open A/foo",
                                  "link A/foo A/bar; creat B/foo, fsync-any A/bar"])
def test_a_workload_that_would_open_the_fifo_has_a_regular_file(text):
    """A write, truncate, xattr or open of A/foo, or a point that names it: the plain synced setup."""
    workload = fifo(text)
    assert not workload.made.fifo
    assert "mkfifo" not in program(workload)


@pytest.mark.parametrize("text, fs", [("collapse A/foo, sync", "btrfs"), ("insert A/foo, sync", "btrfs"),
                                      ("reflink.file A/foo B/foo, sync", "ext4"),
                                      ("reflink.range A/bar A/foo, sync", "f2fs")])
def test_a_step_the_filesystem_refuses_on_the_fifo_has_a_regular_file(text, fs):
    """A refused step still runs, to be refused: on a fifo it fails otherwise (fallocate on a
    pipe is ESPIPE, not EOPNOTSUPP), so the workload has the plain synced setup there."""
    workload = on_profile(fifo(text), fs)
    assert workload.refuses(workload.steps[0].op) and not workload.made.fifo
    assert "mkfifo" not in program(workload)


def test_the_guest_never_opens_the_fifo():
    """In every seq-1 workload that makes it, each command that names it (at a name it has
    then) is mkfifo, mv, ln or unlink, and no point names it: none opens it."""
    made = [w for w in Space(1, extra="fifo").workloads() if w.made.fifo]
    assert len(made) == 72
    for workload in made:
        setup = program(workload).split("sync\npp_acked 0")[0].splitlines()
        assert [line for line in setup if line.endswith(" A/foo") and line[0] != "#"] == ["mkfifo A/foo"], workload.ident
        for i, step in enumerate(workload.steps, 1):
            before, after = workload.trees[i - 1], workload.trees[i]
            named = fifo_names(before) | fifo_names(after)
            if set(step_command(workload, i).split()) & named:
                assert step_command(workload, i).split()[0] in ("mv", "ln", "unlink"), (workload.ident, i)
            assert step.persist is None or step.persist.path not in fifo_names(after), workload.ident


def fifo_names(tree) -> set[str]:
    return {p for p, ino in tree.paths.items() if tree.inodes[ino].kind == FIFO}


def test_the_model_owes_the_fifos_kind_and_link_count():
    workload = fifo(LINKED_SYNCED)
    after = workload.trees[-1].view()
    assert after["A/foo"] == after["A/bar"] and after["A/foo"].kind == FIFO and after["A/foo"].nlink == 2
    for fs in LINUX:
        assert judge(workload, fs, 1, after).verdict == Verdict.CLEAN, fs
        one = {**after, "A/foo": Entry(FIFO, nlink=1, ino=after["A/foo"].ino)}
        one.pop("A/bar")
        assert judge(workload, fs, 1, one).verdict == Verdict.DATA_LOSS, fs  # the link lost after the sync
        assert judge(workload, fs, 0, one).verdict == Verdict.CLEAN, fs
        two = {**after, "A/foo": Entry(FIFO, nlink=1, ino=after["A/foo"].ino)}
        assert judge(workload, fs, 1, two).verdict != Verdict.CLEAN, fs  # two names, a link count of one


def test_a_fifo_that_comes_back_a_regular_file_is_not_clean():
    """The judge compares the kind: A/foo and its names as empty regular files are no tree of the workload."""
    workload = shaped()
    after = workload.trees[-1].view()
    regular = Entry(FILE, 0, digest(b""), 2, (), ino=after["A/foo"].ino)
    for k in (0, 1, 2):
        found = judge(workload, "btrfs", k, {**after, "A/foo": regular, "A/baz": regular})
        assert found.verdict == Verdict.INCONSISTENT and "A/foo is a file" in found.reason, k
    assert judge(workload, "btrfs", 2, after).verdict == Verdict.CLEAN


def test_a_model_that_forgets_the_fifo_is_caught(monkeypatch):
    """A setup tree that makes A/foo a regular file: the true state (a fifo) is then judged wrong."""
    workload = fifo(LINKED_SYNCED)
    truth = workload.trees[-1].view()
    made = setups.setup_tree
    monkeypatch.setattr(setups, "setup_tree", lambda names, was=setups.NOTHING: made(names, replace(was, fifo=False)))
    on_profile.cache_clear()  # the oracle keeps a workload's model by its value
    blind = fifo(LINKED_SYNCED)
    assert judge(blind, "ext4", 1, truth).verdict != Verdict.CLEAN


def test_pp_trees_walk_reads_a_fifo_as_a_fifo():
    walk = "entry A 41ed 0 2 256 - -\nentry A/foo 11a4 0 2 257 - -\nentry A/bar 11a4 0 2 257 - -\n"
    tree, strays = collected(walk)
    assert strays == [] and tree["A/foo"] == Entry(FIFO, nlink=2, ino=257)
    assert judge(fifo(LINKED_SYNCED), "xfs", 1, tree).verdict == Verdict.CLEAN
    regular = walk.replace("11a4", "81a4").replace("0 2 257 - -", f"0 2 257 {digest(b'')} -")
    assert judge(fifo(LINKED_SYNCED), "xfs", 1, collected(regular)[0]).verdict != Verdict.CLEAN


def test_every_tree_of_the_fifo_workloads_judges_clean():
    made = Space(1, extra="fifo")
    assert_own_states_clean(made, [w.index for w in made.workloads() if w.made.fifo])
    assert_own_states_clean(shape_space("four-names", extra="fifo"), [shaped().index])


def test_read_tree_never_opens_a_fifo(tmp_path):
    (tmp_path / "A").mkdir()
    os.mkfifo(tmp_path / "A" / "foo")
    assert read_tree(tmp_path)["A/foo"].kind == FIFO  # an open would wait for a writer


def test_the_program_of_479_with_a_fifo_leaves_the_models_tree(host_tools, tmp_path):  # noqa: F811
    program_leaves_its_tree(shaped(), tmp_path)


def test_generate_takes_the_fifo_setup(capsys):
    code, out, _ = run_cli(["generate", "--show", "seq1f-000130"], capsys)
    assert code == 0 and "mkfifo A/foo\nsync\npp_acked 0\n" in out
    code, out, _ = run_cli(["generate", "--seq", "1", "--setup", "fifo"], capsys)
    assert code == 0 and out == "seq 1: 1488 workloads of 1488\n"
