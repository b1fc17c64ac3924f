"""The xattrs setup (`--setup xattrs`, ids `seqNx-...`): the synced space's workloads with A/foo
given 2,000 user xattrs before the sync (fstests generic/745's); the model owes them with A/foo's
other facts, the guest's loop sets them, the judge compares them, and a model that forgets them
is caught. ext4 and f2fs make none (they keep an inode's xattrs in one block)."""

import os
import subprocess
from dataclasses import replace

import pytest

from tests.cli_run import run_cli
from plugpull.generate.judge import judge
from plugpull.generate.oracle import on_profile
from plugpull.generate.program import GUEST, program
from plugpull.generate.setups import NOTHING, XATTRS, setup_xattrs, xattr_loop
from plugpull.generate.space import Space, space_of, steps_of, whole_space
from plugpull.check.verdict import Verdict

GENERIC_745 = "write.overwrite A/foo, fsync A/foo"  # after its setup: a write within foo, its fsync


def with_xattrs(text: str = GENERIC_745):
    index = whole_space(len(text.split(";"))).locate(steps_of(text))
    ident = f"seq{len(text.split(';'))}x-{index:06d}"
    return space_of(ident).parse(ident)


@pytest.fixture(autouse=True)
def kept_models_dropped_after():
    yield
    on_profile.cache_clear()


def test_the_xattrs_space_is_the_synced_one_with_its_own_ids():
    synced, extra = Space(1), Space(1, extra="xattrs")
    assert extra.count() == synced.count() == 1488
    for index in (0, 26, 1379):
        a, b = synced.workload(index), extra.workload(index)
        assert a.steps == b.steps and a.setup == b.setup and b.synced
        assert b.ident == f"seq1x-{index:06d}"
    assert space_of("seq1x-000026").parse("seq1x-000026").extra == "xattrs"
    with pytest.raises(Exception, match="not of --setup xattrs"):
        extra.parse("seq1l-000026")


def test_the_setup_tree_holds_the_xattrs_and_the_steps_keep_them():
    workload = with_xattrs()
    assert workload.made.xattrs == XATTRS == 2000 and workload.made.links == 0
    owed = workload.trees[0].inode("A/foo").xattrs
    assert owed == setup_xattrs(2000) and owed[0] == ("user.attr_0001", "val_0001") and owed[-1][0] == "user.attr_2000"
    assert workload.trees[-1].inode("A/foo").xattrs == owed
    added = with_xattrs("setxattr A/foo, sync; removexattr A/foo, fsync A/foo")
    assert added.trees[1].inode("A/foo").xattrs == (*owed, ("user.pp", "v1"))
    assert added.trees[2].inode("A/foo").xattrs == owed


def test_none_where_the_setup_does_not_make_a_foo_or_on_ext4_and_f2fs():
    assert with_xattrs("creat A/foo, fsync A/foo").made.xattrs == 0
    for fs, made in (("ext4", 0), ("f2fs", 0), ("xfs", XATTRS), ("btrfs", XATTRS)):
        run = on_profile(with_xattrs(), fs)
        assert run.made.xattrs == made and ("pp-xattr set" in program(run)) == bool(made), fs


def test_the_loop_sets_the_names_and_values_the_model_has(tmp_path):
    """The setup's loop, run by sh with a pp-xattr that writes down what it was asked to set."""
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "pp-xattr"
    fake.write_text('#!/bin/sh\necho "$1 $2 $3 $4" >>"$PP_LOG"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "PP_LOG": str(tmp_path / "log")}
    subprocess.run(["sh", "-ec", "\n".join(xattr_loop(XATTRS, GUEST.at, GUEST.setxattr))], env=env, check=True)
    calls = (tmp_path / "log").read_text().splitlines()
    assert calls == [f"set A/foo {name} {value}" for name, value in with_xattrs().trees[0].inode("A/foo").xattrs]


def test_the_program_sets_them_before_the_sync():
    text = program(with_xattrs())
    loop = xattr_loop(XATTRS, GUEST.at, GUEST.setxattr)[1]
    assert text.index('xfs_io -f -c "pwrite -q -S 0x41 0 16384" A/foo') < text.index(loop) < text.index("\nsync\n")
    assert text.index("\nsync\n") < text.index("pp_acked 0") < text.index('"pwrite -q -S 0x61 0 4096" A/foo')


def test_the_judge_owes_the_xattrs():
    workload = with_xattrs()
    good = workload.trees[-1].view()
    assert judge(workload, "btrfs", 1, good).verdict == Verdict.CLEAN
    lost = dict(good)
    lost["A/foo"] = replace(good["A/foo"], xattrs=tuple(x for x in good["A/foo"].xattrs if x[0] != "user.attr_1999"))
    for point in (0, 1):
        found = judge(workload, "btrfs", point, lost)
        assert found.verdict == Verdict.DATA_LOSS and "A/foo: xattrs" in found.reason


def test_a_model_that_forgets_the_xattrs_is_caught(monkeypatch):
    real = with_xattrs()
    recovered = real.trees[-1].view()
    monkeypatch.setattr("plugpull.generate.setups.made_for", lambda workload: NOTHING)
    on_profile.cache_clear()
    forgot = replace(real)
    assert forgot.made.xattrs == 0
    assert judge(forgot, "btrfs", 1, recovered).verdict != Verdict.CLEAN


def test_the_cli_takes_the_setup(capsys):
    assert run_cli(["generate", "--seq", "1", "--setup", "xattrs"], capsys)[1] == "seq 1: 1488 workloads of 1488\n"
    code, out, _ = run_cli(["generate", "--show", "seq1x-000026", "--fs", "btrfs"], capsys)
    assert code == 0 and out == program(with_xattrs()) and "user.attr_" in out
    code, out, _ = run_cli(["generate", "--show", "seq1x-000026"], capsys)  # ext4's, which makes none
    assert code == 0 and "user.attr_" not in out
    code, out, _ = run_cli(["generate", "--owed", "seq1x-000026", "--fs", "btrfs"], capsys)
    assert code == 0 and "2000 xattrs ('user.attr_0001', 'val_0001') ... ('user.attr_2000', 'val_2000')  fsync-xattrs" in out
    code, _, err = run_cli(["generate", "--show", "seq1y-000026"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
