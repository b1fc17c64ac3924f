"""Several states per guest command on the hot path (`hotbatch`, `pp-check --many`), on the
fake backend: the same verdicts as one state per command, and every state a failed command
leaves unjudged is checked again alone. No VM."""

from dataclasses import replace

import pytest
from tests.unit.guest import test_backend
from tests.fake_backend import FakeBackend, Plan
from tests.unit.guest.test_backend import WL, outcome_of
from tests.unit.check.test_console import PANIC
from tests.unit.check.test_hot_checker import EXPECTED, attached, hot_judged, verdicts

from plugpull.check import hotbatch
from plugpull.check.verdict import Verdict
from plugpull.errors import GuestError


@pytest.fixture
def rec(tmp_path):
    return test_backend.rec.__wrapped__(tmp_path)


def commands(guest, start: str) -> list[str]:
    return [c for c in guest.commands if c.startswith(start)]


def test_one_command_checks_every_state_and_the_verdicts_are_the_one_state_commands(rec, tmp_path):
    alone = hot_judged(rec, FakeBackend([], outcome_of), tmp_path / "alone")
    backend = FakeBackend([], outcome_of)
    many = hot_judged(rec, backend, tmp_path / "many", per_command=8)
    assert verdicts(many) == verdicts(alone) == EXPECTED
    assert [r.verdict.reason for r in many] == [r.verdict.reason for r in alone]
    [guest] = backend.guests
    [command] = commands(guest, "pp-check")
    assert command == "pp-check --many xfs pp tar 0 1 2 3"
    assert len(commands(guest, ": detach ")) == 4


def test_a_guest_that_dies_on_the_command_leaves_its_states_to_a_fresh_guest_one_at_a_time(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=4, console=PANIC)], outcome_of)  # 4 attaches, then dies
    results = hot_judged(rec, backend, tmp_path, per_command=8)
    assert verdicts(results) == EXPECTED
    first, fresh = backend.guests
    assert len(commands(fresh, "pp-check ")) == 4 and not commands(fresh, "pp-check --many")
    assert not first.alive()


def test_after_a_failed_unmount_the_states_after_it_go_to_a_fresh_guest(rec, tmp_path):
    def stuck_on_the_first(image):
        outcome = outcome_of(image)
        return replace(outcome, umount_rc=32) if set(outcome.files) == {WL.path(1)} else outcome

    backend = FakeBackend([], stuck_on_the_first)
    results = hot_judged(rec, backend, tmp_path, per_command=8)
    assert verdicts(results) == [Verdict.FS_CORRUPT, Verdict.CLEAN, Verdict.DATA_LOSS, Verdict.UNMOUNTABLE]
    first, fresh = backend.guests
    assert not commands(first, ": detach ")
    assert len(attached(fresh)) == 3


def test_a_state_with_a_test_hook_is_checked_alone(rec, tmp_path):
    backend = FakeBackend([], outcome_of)
    results = hot_judged(rec, backend, tmp_path, per_command=8, hooks={1: ": hook"})
    assert verdicts(results) == EXPECTED
    [guest] = backend.guests
    assert commands(guest, "pp-check --many") == ["pp-check --many xfs pp tar 0 1 2"]
    assert attached(guest) == [str(results[i].state.disk) for i in (0, 2, 3, 1)]
    assert any(c.startswith(": hook\n") for c in guest.commands)


def test_two_workers_take_fair_shares(rec, tmp_path):
    backend = FakeBackend([], outcome_of)
    results = hot_judged(rec, backend, tmp_path, per_command=8, workers=2)
    assert verdicts(results) == EXPECTED
    shares = [len(c.split()[5:]) for g in backend.guests for c in commands(g, "pp-check --many")]
    assert max(shares) == 2 and sum(shares) == 4, "no worker takes more than half of what is left"


def test_the_report_is_rebuilt_as_the_one_state_command_prints_it():
    fsck = b"".join(b"line %d\n" % i for i in range(50))
    dmesg = b"".join(b"k %d\n" % i for i in range(250)) + b"no newline"
    text, blob = hotbatch.report_of({"keys": b"mount_rc=0\nfsck_rc=1\n", "fsck": fsck, "mount": b"",
                                     "dmesg": dmesg, "blob": b"TAR"})
    assert text.startswith("mount_rc=0\nfsck_rc=1\n---fsck\nline 10\n") and "line 9\n" not in text
    assert text.endswith("---mount\n---dmesg\n" + "".join(f"k {i}\n" for i in range(200))) and blob == b"TAR"
    assert hotbatch.report_of({"keys": b"", "fsck": b"a\nb", "mount": b"", "dmesg": b"", "blob": b""})[0] \
        .startswith("---fsck\na\nb---mount")


def test_an_answer_cut_short_or_a_missing_disk_is_a_guest_error():
    whole = b"3 /tmp/pp-many.1.keys\n0 a\n0 b\n0 c\n1 d\n4 total\n---data\nabcX"
    assert hotbatch.split_answer(whole, 1) == [{"keys": b"abc", "fsck": b"", "mount": b"", "dmesg": b"",
                                                "blob": b"X"}]
    with pytest.raises(GuestError, match="cut short"):
        hotbatch.split_answer(whole[:-1], 1)
    with pytest.raises(GuestError, match="cut short"):
        hotbatch.split_answer(whole, 2)
    with pytest.raises(GuestError, match="did not show up"):
        hotbatch.split_answer(b"disk_missing=3\n", 1)
    with pytest.raises(ValueError):
        hotbatch.many_command("xfs", "pp", "script", [0])
