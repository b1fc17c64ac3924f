"""The seventh operation table: a file's last name unlinked while the workload holds it open
(`unlink-open`), followed by fsync or fdatasync of the open descriptor (`fsync-open`,
`fdatasync-open`): fstests generic/764 and generic/771. The ids the first six tables gave name
the same workloads (pinned by digests of the six tables' code, seq 1 whole and a sample of
seq 2; seq 3 is not walked here); the new ones come after them; the rule is checked on
hand-worked states, and the check is shown to catch a deliberately wrong rule. No VM."""

import random
import subprocess
from dataclasses import replace

import pytest
from tests.unit.generate.pins import seq1_pin, seq2_drawn_pin
from tests.unit.generate.test_generate_later import host_tools, program_leaves_the_models_tree, \
    reproducers_checks_pass  # noqa: F401
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean

from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.generate import oracle
from plugpull.generate.judge import judge
from plugpull.generate.oracle import LINUX, PROFILES, owed, refusals
from plugpull.generate.ops import up_to
from plugpull.generate.program import program
from plugpull.generate.space import Space, workload_of

# sha256 of "ID TEXT | SETUP\n" for every seq 1 workload of the first six tables, and for 300
# seq 2 ids drawn from them by random.Random(47), as the six tables' code gave them
SIX_TABLES = (1038, "1fc0ae4007cd280e898fad6be2a945130374ddcd54a86287cb47b78854395f01")
DRAWN = "c20e150483766ef4795987a2f454d41f35325b404b9373b017bd884ab0a87a5d"

GENERIC_764 = "unlink-open A/foo, fsync-open A/foo"
GENERIC_771 = "unlink-open A/foo, fsync-open A/foo; creat A/bar, fsync A/bar"



def test_every_seq1_id_of_the_six_tables_names_the_same_workload():
    assert seq1_pin(6) == SIX_TABLES


def test_seq2_ids_of_the_six_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(6, seed=47) == DRAWN


def test_the_seventh_tables_workloads_come_after_the_six_tables_and_are_pinned():
    assert Space(1, *up_to(7)).total() == 1046
    assert [Space(1).workload(i).text() for i in (1038, 1039, 1045)] == [
        GENERIC_764, "unlink-open A/foo, fdatasync-open A/foo", "unlink-open B/bar, fdatasync-open B/bar"]
    assert workload_of(GENERIC_764).ident == "seq1-001038"
    assert workload_of(GENERIC_771, synced=False).ident == "seq2u-1514045"
    assert Space(2, ("unlink-open", "creat", "write"), ("fsync-open", "fdatasync-open", "sync", "fsync")).total() == 3472
    old = Space(2, ("creat", "unlink"), ("fsync", "sync"))
    assert max(w.index for w in old.workloads()) < 1505275  # the six tables' names give only their ids


@pytest.mark.parametrize("text", [
    "link A/foo A/bar; unlink-open A/foo, fsync-open A/foo",  # not its last name
    "symlink A/foo; unlink-open A/foo, fsync-open A/foo",  # not a file: nothing to hold open
    "unlink-open A/foo; creat A/bar, sync",  # no point of its own after it
    "unlink-open A/foo, sync",  # the point is the held file's
    "unlink-open A/foo, fsync A",
    "unlink-open A/foo, fsync-open A/bar",  # another file's name
    "creat A/foo, fsync-open A/foo",  # a point of the seventh table after another operation
])
def test_unlink_open_is_of_a_files_last_name_and_followed_by_its_own_point(text):
    with pytest.raises(UsageError):
        workload_of(text)


def test_unlink_open_leaves_the_tree_unlink_leaves_and_nothing_refuses_it():
    opened, plain = workload_of(GENERIC_771), workload_of("unlink A/foo, fsync A; creat A/bar, fsync A/bar")
    assert opened.trees == plain.trees and opened.setup == plain.setup == ("A", "A/foo")
    assert all("unlink-open" not in refusals(fs) for fs in (*PROFILES, "xfs-2008", "ext3", "f2fs+compress"))


def test_the_program_holds_the_file_open_across_the_unlink_and_syncs_the_descriptor():
    text = program(workload_of("unlink-open B/foo, fdatasync-open B/foo; creat A/bar, fsync A/bar"))
    assert ("\nexec 7<B/foo && unlink B/foo || false\n"
            "sync -d /proc/self/fd/7 && exec 7<&- || false  # point 1: fdatasync-open B/foo\n") in text
    assert "\nsync /proc/self/fd/7 && exec 7<&- || false  # point 1: fsync-open A/foo\n" in program(
        workload_of(GENERIC_764))


def test_a_failed_fsync_of_the_held_file_stops_the_program(host_tools, tmp_path):
    """`set -e` and a failure inside the point's list: the program stops before the ack."""
    script = program(workload_of(GENERIC_764)).replace("sync /proc/self/fd/7", "false /proc/self/fd/7")
    (tmp_path / "prog.sh").write_text(script)
    (tmp_path / "work").mkdir()
    done = subprocess.run(["dash", "-c", 'dash "$1" 4>/dev/null; echo "rc $?"', "sh", str(tmp_path / "prog.sh")],
                          cwd=tmp_path / "work", capture_output=True, text=True)
    assert done.stdout.strip().splitlines()[-1] != "rc 0"


@pytest.mark.parametrize("text, synced", [(GENERIC_764, True), (GENERIC_771, False),
                                          ("write.append B/bar; unlink-open B/bar, fdatasync-open B/bar", True)])
def test_the_program_leaves_the_models_tree_on_the_host(host_tools, text, synced, tmp_path):
    program_leaves_the_models_tree(text, synced, tmp_path)


def test_the_reproducers_steps_run_and_its_checks_pass_on_the_host(host_tools, tmp_path):
    reproducers_checks_pass(GENERIC_764, tmp_path)


def owes_the_names_absence(text: str, synced: bool = True, gone: tuple[str, ...] = ()) -> None:
    """fsync of the held file owes every name it had absent (on Linux: the one it was unlinked
    by, and `gone`), and a state with the name back fails there; fdatasync owes nothing of it (no name reads its data back), and
    posix nothing."""
    workload = workload_of(text, synced)
    step = next(i for i, s in enumerate(workload.steps, 1) if s.op.family == "unlink-open")
    point, path = workload.points().index(step) + 1, workload.steps[step - 1].persist.path
    back = {**workload.trees[step].view(), path: workload.trees[step - 1].entry(path)}
    fsync = workload.steps[step - 1].persist.kind == "fsync-open"
    for fs in PROFILES:
        mine = {(o.path, o.values) for o in owed(workload, fs, point) if o.rule == "fsync-unlinked-names"}
        wanted = {(p, frozenset({None})) for p in (path, *gone)}
        assert mine == (wanted if fs in LINUX and fsync else set()), fs
        failed = judge(workload, fs, point, back).verdict != Verdict.CLEAN
        assert failed == (fs in LINUX and fsync), fs
        assert judge(workload, fs, point - 1, back).verdict == Verdict.CLEAN, fs  # before it: the name may stay
        assert judge(workload, fs, point, workload.trees[step].view()).verdict == Verdict.CLEAN, fs


@pytest.mark.parametrize("text, synced, gone", [
    (GENERIC_764, True, ()), (GENERIC_771, False, ()), ("unlink-open B/bar, fdatasync-open B/bar", True, ()),
    ("write.overwrite A/bar, sync; unlink-open A/bar, fsync-open A/bar", True, ()),
    ("rename.file A/foo B/foo; unlink-open B/foo, fsync-open B/foo", True, ("A/foo",)),  # each name it had
])
def test_the_fsync_of_a_file_with_no_name_left_owes_its_names_absence(text, synced, gone):
    owes_the_names_absence(text, synced, gone)


def test_a_name_the_file_had_that_another_file_takes_later_may_be_that_file():
    workload = workload_of("unlink-open A/foo, fsync-open A/foo; creat A/foo, sync")
    later = {o.values for o in owed(workload, "ext4", 1) if o.path == "A/foo" and o.name == "kind"}
    assert later == {frozenset({None, "file"})}  # the creat may be on disk or not after point 1


def test_the_check_catches_a_rule_that_owes_nothing_after_the_fsync(monkeypatch):
    """A wrong rule: the fsync of a file with no name is taken for one that owes nothing, as
    fdatasync does (btrfs before 5e85262e542d behaved so)."""
    wrong = tuple(replace(r, owes=lambda ctx: []) if r.name == "fsync-unlinked-names" else r for r in oracle.RULES)
    monkeypatch.setattr(oracle, "RULES", wrong)
    with pytest.raises(AssertionError):
        owes_the_names_absence(GENERIC_764)


def test_the_check_catches_a_rule_that_owes_the_file_still_there(monkeypatch):
    """A wrong rule: the fsync persists the file as it was before the unlink."""
    def kept(ctx):
        return [(p, "kind", "file") for p, _ in oracle.gone_names(ctx.inode_history(), ctx.path)]

    wrong = tuple(replace(r, owes=kept) if r.name == "fsync-unlinked-names" else r for r in oracle.RULES)
    monkeypatch.setattr(oracle, "RULES", wrong)
    with pytest.raises(AssertionError):
        owes_the_names_absence(GENERIC_764)


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
def test_the_models_own_states_after_the_seventh_tables_steps_are_clean(synced):
    space = Space(2, synced=synced)
    block = range(Space(2, *up_to(6)).total(), Space(2, *up_to(7)).total())
    assert_own_states_clean(Space(1, synced=synced), range(1038, 1046))
    assert_own_states_clean(space, sorted(random.Random(17).sample(block, 40)))
