"""--lose-disk: a stack's member left out of every checked state, refused before any guest
boots (exit 2, one line) where there is nothing to lose it from. No VM."""

from pathlib import Path

import pytest

from plugpull.check.checker import Checker
from plugpull.crash.spec import CrashSpec
from plugpull.errors import UsageError
from plugpull.guest.contract.channel import GuestResult
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.fs import filesystem
from plugpull.testbed.stack import Stack, without
from tests.unit.testbed.test_stack import StubGuest
from tests.cli_run import run_cli


@pytest.mark.parametrize("stack, text, member", [("md-raid5", "0", 0), ("md-raid5", "2", 2),
                                                  ("md-raid1,lvm", "1", 1), ("md-raid5-ppl", "", None),
                                                  ("md-raid5-journal", "2", 2)])
def test_a_member_is_named_by_its_number(stack, text, member):
    assert CrashSpec(stack=stack, lose_disk=text).resolve().lost_member == member


def test_random_is_a_member_drawn_from_the_seed():
    drawn = {seed: CrashSpec(stack="md-raid5", lose_disk="random", seed=seed).resolve().lost_member
             for seed in range(1, 30)}
    assert set(drawn.values()) == {0, 1, 2}, "every member can be drawn"
    assert all(CrashSpec(stack="md-raid5", lose_disk="random", seed=s).resolve().lost_member == m
               for s, m in drawn.items()), "the same seed draws the same member"
    assert all(CrashSpec(stack="md-raid5-journal", lose_disk="random", seed=s).resolve().lost_member == m
               for s, m in drawn.items()), "a journal disk is never drawn: the same member as md-raid5"


@pytest.mark.parametrize("stack, text, message", [
    ("md-raid5", "3", "members 0 to 2"), ("md-raid1", "2", "members 0 to 1"),
    ("md-raid5-journal", "3", r"members 0 to 2 \(disk 3 is its write journal\)"),
    ("lvm", "0", "no redundancy"), ("dm-crypt", "random", "no redundancy"), ("", "0", "there is none"),
    ("md-raid5", "-1", "expected a member number"), ("md-raid5", "one", "expected a member number"),
])
def test_a_member_that_cannot_be_lost_is_refused(stack, text, message):
    with pytest.raises(UsageError, match=message):
        CrashSpec(stack=stack, lose_disk=text).resolve()


@pytest.mark.parametrize("argv", [["--stack", "md-raid5", "--lose-disk", "3"], ["--stack", "lvm", "--lose-disk", "0"],
                                  ["--lose-disk", "random"], ["--stack", "md-raid1", "--lose-disk", "x"]])
def test_cli_refuses_a_bad_lose_disk_with_exit_2_before_any_guest(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, said = run_cli(["crash", *argv], capsys)
    assert rc == 2
    err = said.strip().splitlines()
    assert len(err) == 1 and "--lose-disk" in err[0]
    assert not any(tmp_path.iterdir()), "nothing created"


def test_the_checker_assembles_the_array_without_the_lost_member():
    assert without(["sdb", "sdc", "sdd"], 1) == ["sdb", "sdd"] and without(["sdb", "sdc"], None) == ["sdb", "sdc"]
    guest = StubGuest(GuestResult("pp-stack open", 0, b"top=md0\n", b""))
    checker = Checker(rig=None, fs=filesystem("xfs"), stack=Stack.parse("md-raid5"), lost=0)
    obs = checker.check_state(guest, ["sdb", "sdc", "sdd"], CrashState((Path("a"), Path("b"), Path("c"))), "none")
    assert guest.commands[0] == "pp-stack force-open md-raid5 /dev/sdc /dev/sdd" and obs.mount_rc == 0


def test_an_artifact_keeps_the_lost_member_for_replay(tmp_path):
    import json
    from plugpull.check.verdict import Observation
    from plugpull.crash.artifacts import save_artifact
    from plugpull.results import StateResult

    result = StateResult(fs="xfs", mode="barrier", workload="fsync-files", model="reorder", seed=1, cut=9,
                         verdict="data-loss", reason="r", acks_required=3, acks_lost=1, fsck_rc=0, cuts=(9, 4, 7))
    obs = Observation(mount_rc=0, fsck_rc=0)
    lost = save_artifact(tmp_path, tmp_path / "record", result, "d", obs, lost_member=0)
    whole = save_artifact(tmp_path / "b", tmp_path / "record", result, "d", obs)
    assert json.loads((lost / "state.json").read_text())["lost_member"] == 0
    assert "lost_member" not in json.loads((whole / "state.json").read_text())
