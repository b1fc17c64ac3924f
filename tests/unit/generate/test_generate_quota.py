"""The quota setup (`--setup quota`, ids `seqNq-...`): the synced space's workloads with btrfs
quotas enabled before the setup's names (fstests btrfs/119's); the model is the synced setup's,
and every other filesystem refuses it: the program's command must fail there."""

import os
import subprocess

import pytest

from tests.cli_run import run_cli
from plugpull.generate.oracle import on_profile
from plugpull.generate.program import program
from plugpull.generate.setups import quota_line
from plugpull.generate.space import Space, space_of


def quota(ident: str = "seq1q-000026"):
    return space_of(ident).parse(ident)


def test_the_quota_space_is_the_synced_one_with_its_own_ids():
    synced, extra = Space(1), Space(1, extra="quota")
    assert extra.count() == synced.count() == 1488
    for index in (0, 26, 1379):
        a, b = synced.workload(index), extra.workload(index)
        assert a.steps == b.steps and a.setup == b.setup and b.synced and a.trees == b.trees
        assert b.ident == f"seq1q-{index:06d}" and b.made.links == b.made.xattrs == 0
    with pytest.raises(Exception, match="not of --setup quota"):
        extra.parse("seq1x-000026")


def test_the_program_enables_quotas_before_the_names_and_the_sync():
    lines = program(quota()).splitlines()
    enable = lines.index("btrfs quota enable ..")
    assert enable < lines.index("mkdir A") < lines.index("sync") < lines.index("pp_acked 0")
    assert "quota" not in program(Space(1).workload(26))


@pytest.mark.parametrize("fs", ["ext4", "xfs", "f2fs"])
def test_every_other_filesystem_refuses_it(fs):
    run = on_profile(quota(), fs)
    assert "quota" in run.refused and run.trees == quota().trees
    assert quota_line("..", True) in program(run).splitlines()
    assert "quota" not in on_profile(quota(), "btrfs").refused


@pytest.mark.parametrize("works, code", [(False, 0), (True, 1)])
def test_the_refused_command_must_fail(tmp_path, works, code):
    """The refused line run by sh with a `btrfs` that fails (not btrfs: the program goes on) or
    works (the refusal is wrong: the program stops)."""
    fake = tmp_path / "btrfs"
    fake.write_text(f"#!/bin/sh\n{'exit 0' if works else 'echo not a btrfs filesystem >&2; exit 1'}\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    done = subprocess.run(["sh", "-ec", quota_line("..", True) + "\necho went on"], env=env, capture_output=True,
                          text=True)
    assert done.returncode == code and ("went on" in done.stdout) == (not works)


def test_the_cli_takes_the_setup(capsys):
    assert run_cli(["generate", "--seq", "1", "--setup", "quota"], capsys)[1] == "seq 1: 1488 workloads of 1488\n"
    code, out, _ = run_cli(["generate", "--show", "seq1q-000026", "--fs", "xfs"], capsys)
    assert code == 0 and quota_line("..", True) in out
