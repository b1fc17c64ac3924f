"""rmdir, the third operation table: the ids the first two tables gave name the same workloads,
the new ones come after them and are pinned; rmdir is valid only on a directory empty in the
model; the guest's and the reproducer's commands do on the host's own filesystem what the model
says; and what sync and the parent's fsync owe after it, with a hand-worked state that lost it
(data-loss) and one the filesystem may give (clean). No VM."""


import pytest
from tests.unit.generate.test_generate_later import host_tools, program_leaves_the_models_tree, reproducers_checks_pass  # noqa: F401

from plugpull import cli
from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.generate.judge import judge
from plugpull.generate.oracle import LINUX, PROFILES, owed
from plugpull.generate.ops import RMDIR_OPS, up_to
from plugpull.generate.program import program
from plugpull.generate.space import Space, space_of, workload_of
from plugpull.generate.tree import DIR

# ids and what they named before rmdir was added (read from the two tables' code)
SECOND_TABLE_IDS = {
    "seq1-000356": "dwrite.overwrite A/foo, sync",
    "seq1-000411": "mmapwrite.extend B/bar, msync B/bar",
    "seq2-119036": "creat A/foo; dwrite.overwrite A/foo, sync",
    "seq2-156612": "mmapwrite.extend A/foo, msync A/foo; dwrite.append A/foo, fsync A/foo",
    "seq2-167643": "mmapwrite.extend B/bar, msync B/bar; mmapwrite.extend B/bar, msync B/bar",
    "seq3-33156268": "creat A/foo; creat A/bar; dwrite.overwrite A/foo, sync",
    "seq3-58557563": "mmapwrite.extend B/bar, msync B/bar; mmapwrite.extend B/bar, msync B/bar; "
                     "mmapwrite.extend B/bar, msync B/bar",
}


@pytest.mark.parametrize("ident", list(SECOND_TABLE_IDS))
def test_the_second_tables_ids_name_the_same_workloads(ident):
    assert space_of(ident).parse(ident).text() == SECOND_TABLE_IDS[ident]
    assert workload_of(SECOND_TABLE_IDS[ident]).ident == ident


def test_the_rmdir_workloads_come_after_the_two_tables_and_are_pinned():
    assert [op.text() for op in RMDIR_OPS] == ["rmdir A", "rmdir B"]
    assert [Space(1).workload(i).text() for i in range(412, 416)] == [
        "rmdir A, sync", "rmdir A, fsync .", "rmdir B, sync", "rmdir B, fsync ."]
    assert Space(2).workload(167644).text() == "creat A/foo; rmdir B, sync"
    assert Space(3).workload(58557564).text() == "creat A/foo; creat A/bar; rmdir B, sync"
    assert Space(3).workload(59028515).text() == "rmdir B, fsync .; rmdir A, fsync .; mkdir B, fsync ."
    assert workload_of("unlink A/foo; rmdir A, sync").ident == "seq2-168060"
    assert workload_of("mkdir A; rename.dir A B; rmdir B, fsync .").ident == "seq3-58573809"
    assert Space(2).locate(Space(2).workload(168500).steps) == 168500
    assert Space(3, ("rmdir", "unlink", "mkdir"), ("sync", "fsync")).total() == 3512


def test_old_names_give_only_old_ids():
    """`--ops` without rmdir is a filter of the two tables: the ids it gave before."""
    old = Space(2, ("unlink", "mkdir"), ("sync", "fsync"))
    listed = [w.index for w in old.workloads()]
    assert len(listed) == old.total() and max(listed) < 167644
    with_rmdir = [w.index for w in Space(2, ("unlink", "mkdir", "rmdir"), ("sync", "fsync")).workloads()]
    assert set(listed) < set(with_rmdir) and min(set(with_rmdir) - set(listed)) >= 167644
    assert Space(2, *up_to(2)).sample(30, seed=4) == Space(2, *up_to(2)).sample(30, seed=4)
    assert max(Space(2, *up_to(2)).sample(200, seed=4)) < 167644


@pytest.mark.parametrize("text", [
    "creat A/foo; rmdir A, sync",  # not empty
    "rmdir A, sync; rmdir A, sync",  # gone already
    "symlink A/foo; rmdir A, sync",  # a symlink in it
    "rename.dir A B; rmdir B, sync",  # a directory from the setup moves with its files
    "rmdir A; creat A/foo, sync",  # no directory to create it in
    "mkdir A; link B/foo A/foo; rmdir A, sync",
])
def test_rmdir_of_a_directory_not_empty_or_not_there_is_no_workload(text):
    with pytest.raises(UsageError):
        workload_of(text)


def test_rmdir_takes_an_untouched_name_in_the_directory_as_absent():
    assert workload_of("rmdir A, sync").setup == ("A",)  # made empty by the setup
    assert workload_of("unlink A/foo; rmdir A, sync").setup == ("A", "A/foo")  # A/bar never made
    assert workload_of("mkdir A; rename.dir A B; rmdir B, fsync .").setup == ()
    assert workload_of("rmdir A; mkdir A, fsync A").trees[-1].kind("A") == DIR


def test_the_commands_list_and_print_rmdir(capsys):
    assert cli.main(["generate", "--seq", "2", "--ops", "rmdir,unlink,sync", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 52 and "seq2-168060  unlink A/foo; rmdir A, sync" in listed
    assert cli.main(["generate", "--seq", "2", "--ops", "rmdir,unlink,sync", "--show", "seq2-168060"]) == 0
    assert "# 2: rmdir A\nrmdir A\nsync  # point 1: sync\npp_acked 1" in capsys.readouterr().out
    assert "\nrmdir A\nsync .  # point 1: fsync .\n" in program(workload_of("rmdir A, fsync ."))


HOST = ["unlink A/foo; rmdir A, fsync .", "mkdir A; rename.dir A B; rmdir B, fsync .",
        "rename.file A/foo B/foo; rmdir A, sync", "rmdir B, sync; rmdir A, fsync .; mkdir B, fsync ."]


@pytest.mark.parametrize("synced", [True, False])
@pytest.mark.parametrize("text", HOST)
def test_the_guest_program_leaves_the_models_tree(host_tools, text, synced, tmp_path):
    program_leaves_the_models_tree(text, synced, tmp_path)


@pytest.mark.parametrize("text", HOST)
def test_the_reproducers_commands_leave_a_tree_its_checks_pass(host_tools, text, tmp_path):
    reproducers_checks_pass(text, tmp_path)


def view(text: str, step: int) -> dict:
    return workload_of(text).trees[step].view()


def verdict(text: str, fs: str, k, state) -> Verdict:
    return judge(workload_of(text), fs, k, state).verdict


def owes(text: str, fs: str, k: int) -> dict:
    return {(o.path, o.name): (o.values, o.rule) for o in owed(workload_of(text), fs, k)}


@pytest.mark.parametrize("point, rule", [("sync", "sync-all"), ("fsync .", "fsync-dir-entries")])
def test_sync_and_the_parents_fsync_owe_the_directory_gone_on_linux(point, rule):
    """sync(2) on Linux waits for every change; fsync(2) of the directory persists its entries,
    the removed one too. POSIX owes neither (sync may return early; a directory's fsync is
    not specified)."""
    text = f"rmdir A, {point}"
    assert owes(text, "ext4", 1)[("A", "kind")] == ({None}, rule)
    still_there = view(text, 0)
    for fs in LINUX:
        assert verdict(text, fs, 1, still_there) == Verdict.DATA_LOSS
        assert f"({rule}, point 1)" in judge(workload_of(text), fs, 1, still_there).reason
        assert verdict(text, fs, 1, view(text, 1)) == Verdict.CLEAN
        assert verdict(text, fs, 0, still_there) == Verdict.CLEAN  # not yet acked
    assert verdict(text, "posix", 1, still_there) == Verdict.CLEAN


@pytest.mark.parametrize("point", ["sync", "fsync ."])
def test_a_removed_directory_whose_files_came_back_is_data_loss(point):
    """`unlink A/foo; rmdir A` then the point: a state with A and its file back (neither
    removal durable), or A back empty (the unlink durable, the rmdir not), lost the rmdir."""
    text = f"unlink A/foo; rmdir A, {point}"
    back, empty = view(text, 0), view(text, 1)
    assert set(back) == {"A", "A/foo"} and set(empty) == {"A"}
    for fs in LINUX:
        assert verdict(text, fs, 1, back) == Verdict.DATA_LOSS
        assert verdict(text, fs, 1, empty) == Verdict.DATA_LOSS
        assert verdict(text, fs, 1, view(text, 2)) == Verdict.CLEAN
        assert verdict(text, fs, 0, back) == verdict(text, fs, 0, empty) == Verdict.CLEAN
    assert verdict(text, "posix", 1, back) == Verdict.CLEAN


def test_a_synced_unlink_stays_owed_after_the_rmdir_that_follows():
    text = "unlink A/foo, sync; rmdir A, fsync ."
    found = owes(text, "xfs", 2)
    assert found[("A/foo", "kind")] == ({None}, "sync-all") and found[("A", "kind")] == ({None}, "fsync-dir-entries")
    assert verdict(text, "xfs", 1, view(text, 0)) == Verdict.DATA_LOSS  # the file came back
    assert verdict(text, "xfs", 1, view(text, 1)) == Verdict.CLEAN  # the rmdir not yet owed


def rmdir_undone(text: str) -> dict:
    """The last tree, with A as the setup made it: the rmdir of A did not reach the disk."""
    return {**view(text, -1), "A": view(text, 0)["A"]}


@pytest.mark.parametrize("text, k, state", [
    ("rmdir A; creat B/foo, fsync B/foo", 1, rmdir_undone),  # a file's fsync owes no rmdir it did not touch
    ("rmdir A, sync; mkdir A, fsync A", 1, lambda t: view(t, 2)),  # made again after the point
    ("rmdir A, fsync .; mkdir A, fsync .", 1, lambda t: view(t, 2)),
    ("mkdir A; rename.dir A B; rmdir B, fsync .", 0, lambda t: view(t, 2)),  # the rename done, not the rmdir
])
def test_no_rule_owes_more_than_the_filesystem_promises_after_rmdir(text, k, state):
    for fs in PROFILES:
        found = judge(workload_of(text), fs, k, state(text))
        assert found.verdict == Verdict.CLEAN, (fs, found.reason)


def test_the_directory_fsync_after_rmdir_owes_a_moved_file_under_one_of_its_names():
    """`rename.file A/foo B/foo; rmdir A, fsync .`: the file the setup's sync owed moved, never
    removed: a state with A gone and the file under neither name is data-loss."""
    text = "rename.file A/foo B/foo; rmdir A, fsync ."
    lost = {p: e for p, e in view(text, 2).items() if p != "B/foo"}
    found = judge(workload_of(text), "btrfs", 1, lost)
    assert found.verdict == Verdict.DATA_LOSS and "under none of A/foo, B/foo" in found.reason
    assert verdict(text, "btrfs", 1, view(text, 2)) == Verdict.CLEAN
