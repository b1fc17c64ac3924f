"""The eleventh operation table: a block of a file cloned onto another range of the same file
(`self-clone.to-start`, `self-clone.past-eof`): fstests btrfs/098's and generic/588's steps. The
ids the first ten tables gave name the same workloads (pinned by digests of the ten tables'
code, seq 1 whole and a sample of seq 2); the new ones come after them; the model's contents
and what a point owes after it are checked on values worked out by hand, and each check is
shown to fail with a deliberately wrong rule. No VM."""

import random

import pytest
from tests.unit.generate.pins import seq1_pin, seq2_drawn_pin
from tests.unit.generate.test_generate_later import host_tools  # noqa: F401
from tests.unit.generate.test_generate_reach import refused_on_the_host
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean, table_block

from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.generate import selfclone
from plugpull.generate.judge import judge
from plugpull.generate.oracle import on_profile, refusals, rules_of
from plugpull.generate.ops import INITIAL_SIZE, Persist, Sim, apply
from plugpull.generate.points import followed, persistence_choices
from plugpull.generate.program import program
from plugpull.generate.space import Space, Workload, ordered_setup, steps_of, workload_of
from plugpull.generate.tree import FILE

# sha256 of "ID TEXT | SETUP\n" for every seq 1 workload of the first ten tables, and for 300
# seq 2 ids drawn from them by random.Random(57), as the ten tables' code gave them
TEN_TABLES = (1380, "1ddbd8ab7345bfa37ab318fb69c5aa4c9e5544233cc187206683ea5da5ce9a0d")
DRAWN = "d6a0b456b8e6a93c5178b823840f61d8ef189670a58d619dd6e7a4654aa44db8"

BTRFS_098 = "creat A/foo; write.past-eof A/foo, fsync A/foo; self-clone.to-start A/foo, fsync A/foo"
GENERIC_588 = "write.unaligned A/foo; self-clone.past-eof A/foo, fsync A/foo; write.overwrite A/foo, fsync A/foo"

A = b"A" * INITIAL_SIZE  # the setup's A/foo
HAND = {  # A/foo after the last step, worked out by hand from FICLONERANGE on the file itself
    "self-clone.to-start A/foo, fsync A/foo": A,  # its last block onto its first: the same bytes
    "write.append A/foo; self-clone.to-start A/foo, fsync A/foo": b"a" * 4096 + b"A" * 12288 + b"a" * 4096,
    "self-clone.past-eof A/foo, fsync A/foo": A + b"A" * 4096,
    "write.unaligned A/foo; self-clone.past-eof A/foo, fsync A/foo":
        b"A" * 3000 + b"a" * 5000 + b"A" * 8384 + b"a" * 3904 + b"A" * 192,
    BTRFS_098: b"b" * 4096 + bytes(4096) + b"b" * 4096,  # into the hole before the block
    GENERIC_588: b"c" * 4096 + b"a" * 3904 + b"A" * 8384 + b"a" * 3904 + b"A" * 192,
    "creat A/foo; write.past-eof A/foo; self-clone.past-eof A/foo, fsync A/foo":
        bytes(8192) + b"b" * 4096 + bytes(4096),  # a hole cloned past the end: zeros, the size one block more
}
REFUSED_HERE = ["truncate A/foo; self-clone.to-start A/foo, sync",  # 2500 bytes: an unaligned offset, EINVAL
                "creat A/foo; self-clone.past-eof A/foo, sync",  # empty: no second block, EINVAL
                "creat A/foo; write.append A/foo; self-clone.to-start A/foo, sync",  # one block onto itself
                "write.unaligned A/foo; self-clone.to-start A/foo, fsync A/bar"]  # a point it does not offer


def made(text: str, index: int = 0) -> Workload:
    """The workload `text` describes, as the space makes it but unnumbered (a seq-3 id costs a
    count of the whole space, again after each wrong rule: `index` tells one made under a wrong
    rule apart from the oracle's cached answers); UsageError where a step is invalid."""
    steps, sim = steps_of(text), Sim()
    for i, step in enumerate(steps, 1):
        after = sim.copy()
        if not apply(after, step.op, i):
            raise UsageError(f"step {i} ({step.op.text()}) is invalid")
        offered = dict(followed(after, step.op, last=i == len(steps)))
        if step.persist not in offered:
            raise UsageError(f"step {i}: {step.persist} is not offered")
        sim = offered[step.persist]
    return Workload(len(steps), index, steps, ordered_setup(sim.setup))



def test_every_seq1_id_of_the_ten_tables_names_the_same_workload():
    assert seq1_pin(10) == TEN_TABLES


def test_seq2_ids_of_the_ten_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(10, seed=57) == DRAWN


def test_the_eleventh_tables_workloads_come_after_the_ten_tables_and_are_pinned():
    assert [Space(seq, ("self-clone",)).total() for seq in (1, 2)] == [40, 2688]
    assert [Space(1).workload(i).text() for i in (1380, 1381, 1419)] == [
        "self-clone.to-start A/foo, sync", "self-clone.to-start A/foo, fsync A/foo",
        "self-clone.past-eof B/bar, fsync-any B"]
    assert Space(2).workload(2738122).text() == "creat A/foo; self-clone.to-start A/bar, sync"
    assert workload_of("self-clone.past-eof A/foo, fsync A/foo").ident == "seq1-001386"


def model_is_the_hand_worked_one() -> None:
    for text, data in HAND.items():
        assert made(text).trees[-1].inode("A/foo").data == data, text


def test_the_file_holds_what_the_clone_leaves_worked_out_by_hand():
    model_is_the_hand_worked_one()


@pytest.mark.parametrize("wrong", [
    lambda variant, data: data,  # the clone not done
    lambda variant, data: data[4096:8192] + data[4096:] if variant == "to-start" else data + data[:4096],  # off a block
])
def test_the_clone_check_catches_a_wrong_rule(monkeypatch, wrong):
    monkeypatch.setattr(selfclone, "self_cloned", wrong)
    with pytest.raises(AssertionError):
        model_is_the_hand_worked_one()


@pytest.mark.parametrize("text", REFUSED_HERE)
def test_a_clone_the_kernel_refuses_with_einval_is_no_workload(text):
    with pytest.raises(UsageError):
        made(text)
    if text.count(";") < 2:  # and so the space has it not: seq 1 and 2 are counted in seconds
        with pytest.raises(UsageError):
            workload_of(text)


def test_the_einval_check_catches_a_rule_that_lets_every_size_through(monkeypatch):
    monkeypatch.setattr(selfclone, "self_fits", lambda size: True)
    assert all(made(text).trees[-1].kind("A/foo") == FILE for text in REFUSED_HERE[:3])


def test_its_points_are_those_of_a_data_change_of_the_file():
    workload = made("self-clone.to-start A/foo, sync")
    offered = persistence_choices(workload.trees[1], workload.steps[0].op, last=True)
    assert offered[:3] == (Persist("sync"), Persist("fsync", "A/foo"), Persist("fdatasync", "A/foo"))


@pytest.mark.parametrize("text", [BTRFS_098, GENERIC_588.rsplit(";", 1)[0], "self-clone.past-eof B/bar, fdatasync B/bar"])
def test_an_fsync_after_the_clone_owes_the_cloned_data_where_done_and_the_old_where_refused(text):
    workload = made(text)
    last, path = len(workload.points()), workload.steps[-1].op.args[0]
    before, now = workload.trees[-2].view(), workload.trees[-1].view()
    for fs in ("xfs", "btrfs", "posix"):  # done: the file as it was before the clone is data loss
        found = judge(workload, fs, last, before)
        assert found.verdict == Verdict.DATA_LOSS and path in found.reason, (fs, found.reason)
        assert judge(workload, fs, last, now).verdict == Verdict.CLEAN
    for fs in ("ext4", "f2fs", "xfs-2008", "ext3"):  # refused, not done: the clone's contents are data loss
        run = on_profile(workload, fs)
        assert run.refused == {"self-clone"}
        assert judge(run, rules_of(fs), last, now).verdict == Verdict.DATA_LOSS, fs
        assert judge(run, rules_of(fs), last, before).verdict == Verdict.CLEAN, fs


def test_the_owed_check_catches_a_rule_that_leaves_the_file_as_it_was(monkeypatch):
    """Judged by a model whose clone does nothing, the state the real clone leaves is data loss."""
    truth = made(BTRFS_098).trees[-1].view()
    monkeypatch.setattr(selfclone, "self_cloned", lambda variant, data: data)
    assert judge(made(BTRFS_098, index=-1), "btrfs", 2, truth).verdict == Verdict.DATA_LOSS


def test_it_is_refused_where_reflink_is():
    assert {fs for fs in ("ext4", "xfs", "btrfs", "f2fs", "xfs-2008", "ext3", "btrfs+compress", "f2fs+compress")
            if "self-clone" in refusals(fs)} == {"ext4", "f2fs", "xfs-2008", "ext3", "f2fs+compress"}


def test_show_prints_the_clone_on_the_file_itself(capsys):  # generic/588's first two steps
    from plugpull import cli
    ident = workload_of("write.unaligned A/foo; self-clone.past-eof A/foo, fsync A/foo").ident
    assert cli.main(["generate", "--show", ident, "--fs", "xfs"]) == 0
    assert 'xfs_io -c "reflink -q A/foo 4096 16384 4096" A/foo 2>&1) && [ -z "$pp_said" ]' in capsys.readouterr().out
    assert cli.main(["generate", "--show", ident, "--fs", "ext4"]) == 0
    assert "EOPNOTSUPP here: not done" in capsys.readouterr().out


def test_refused_on_the_host_leaves_the_refused_models_tree_and_done_where_not_expected_fails(host_tools, tmp_path):
    """The host's filesystem (ext4 here) refuses the clone as ext4's profile says: the program goes
    on without it and leaves the model's tree with it not done; run as a filesystem that does it
    would (the profile of xfs), the refusal fails the program."""
    workload = made(GENERIC_588)
    seen = refused_on_the_host(tmp_path, workload, workload)
    assert seen["A/foo"][1] == INITIAL_SIZE != workload.trees[-1].entry("A/foo").size


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
@pytest.mark.parametrize("seq, k", [(1, None), (2, 40)])
def test_the_models_own_states_after_the_eleventh_tables_steps_are_clean(seq, k, synced):
    assert_own_states_clean(Space(seq, synced=synced), table_block(seq, 11, k, seed=19))
