"""The hot-plug checker on the fake backend: one guest stays up, each state is plugged in,
checked and unplugged, and a guest that fails or cannot be trusted is replaced. No VM."""

import itertools
import subprocess
import threading
from dataclasses import replace

import pytest
from tests.unit.guest import test_backend
from tests.fake_backend import FakeBackend, Outcome, Plan
from tests.unit.guest.test_backend import IMAGE, ROUNDS, WL, XFS, outcome_of
from tests.unit.check.test_console import PANIC

from plugpull.check.checker import Checker, Plug, parse_report, split_blob
from plugpull.check.verdict import Verdict
from plugpull.crash.judge import judge
from plugpull.errors import GuestError
from plugpull.guest.contract.backend import DISK_FUNCTIONS, await_disk_command
from plugpull.guest.contract.config import Accel
from plugpull.guest.rig import Rig
from plugpull.powerloss.crashstate import CrashState

EXPECTED = [Verdict.CLEAN, Verdict.CLEAN, Verdict.DATA_LOSS, Verdict.UNMOUNTABLE]
# per state: attach, pp-check (the files come with its report), detach
PER_STATE = 3


@pytest.fixture
def rec(tmp_path):
    return test_backend.rec.__wrapped__(tmp_path)


def hot_judged(rec, backend, tmp_path, per_command=1, **settings):
    """Judged on the hot path, one state per guest command unless `per_command` says more."""
    checker = Checker(Rig(IMAGE, Accel.TCG, backend), XFS, plug=Plug.HOT, per_command=per_command, **settings)
    return judge(rec, ROUNDS, checker, WL, seed=1, state_dir=tmp_path / "states")


def verdicts(results) -> list[Verdict]:
    return [r.verdict.verdict for r in results]


def attached(guest) -> list[str]:
    return [c.split(" ", 2)[2] for c in guest.commands if c.startswith(": attach ")]


def test_one_guest_checks_every_state_plugged_in_and_out(rec, tmp_path):
    backend = FakeBackend([], outcome_of)
    results = hot_judged(rec, backend, tmp_path)
    assert verdicts(results) == EXPECTED
    [guest] = backend.guests
    assert guest.spec.disks == () and guest.spec.scsi_controller
    assert attached(guest) == [str(r.state.disk) for r in results]
    assert sum(c.startswith(": detach ") for c in guest.commands) == 4
    assert not guest.alive()


def test_hot_plug_and_batch_paths_agree(rec, tmp_path):
    hot = hot_judged(rec, FakeBackend([], outcome_of), tmp_path / "hot")
    batch = test_backend.judged(rec, FakeBackend([], outcome_of), tmp_path / "batch", batch=4)
    one_boot = test_backend.judged(rec, FakeBackend([], outcome_of), tmp_path / "one", batch=1)
    assert verdicts(hot) == verdicts(batch) == verdicts(one_boot) == EXPECTED


def test_a_guest_that_dies_mid_run_is_replaced_and_the_fresh_guest_judges_that_state_again(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=PER_STATE + 1)], outcome_of)  # dies on the second pp-check
    results = hot_judged(rec, backend, tmp_path)
    assert verdicts(results) == [Verdict.CLEAN, Verdict.CLEAN, Verdict.DATA_LOSS, Verdict.UNMOUNTABLE]
    first, fresh = backend.guests
    assert attached(fresh) == [str(r.state.disk) for r in results[1:]]
    assert not first.alive() and not fresh.alive()


def test_a_state_the_rig_fails_on_twice_is_an_infra_error_and_no_state_goes_without_a_result(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=PER_STATE + 1), Plan(dies_after=1)], outcome_of)
    results = hot_judged(rec, backend, tmp_path)
    assert verdicts(results) == [Verdict.CLEAN, Verdict.INFRA_ERROR, Verdict.DATA_LOSS, Verdict.UNMOUNTABLE]
    assert "checker guest failed" in results[1].verdict.reason
    assert len(backend.guests) == 3


def test_a_kernel_crash_is_the_states_verdict_and_the_state_is_not_checked_again(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=PER_STATE + 1, console=PANIC)], outcome_of)
    results = hot_judged(rec, backend, tmp_path)
    assert verdicts(results) == [Verdict.CLEAN, Verdict.KERNEL_CRASH, Verdict.DATA_LOSS, Verdict.UNMOUNTABLE]
    assert "sysrq triggered crash" in results[1].verdict.reason
    assert str(results[1].state.disk) not in attached(backend.guests[1])


def test_a_panic_while_plugging_a_state_is_that_states_kernel_crash(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=PER_STATE, console=PANIC)], outcome_of)  # dies on the second attach
    results = hot_judged(rec, backend, tmp_path)
    assert verdicts(results) == [Verdict.CLEAN, Verdict.KERNEL_CRASH, Verdict.DATA_LOSS, Verdict.UNMOUNTABLE]


def test_a_hung_check_is_kernel_crash_and_the_guest_is_replaced(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=PER_STATE + 1, hangs=True)], outcome_of)
    results = hot_judged(rec, backend, tmp_path)
    assert results[1].verdict.verdict is Verdict.KERNEL_CRASH
    assert results[1].verdict.reason.startswith("kernel hung")
    assert len(backend.guests) == 2


def test_after_a_failed_unmount_the_guest_is_replaced_without_unplugging(rec, tmp_path):
    def stuck_on_the_first(image):
        outcome = outcome_of(image)
        return replace(outcome, umount_rc=32) if set(outcome.files) == {WL.path(1)} else outcome

    backend = FakeBackend([], stuck_on_the_first)
    results = hot_judged(rec, backend, tmp_path)
    assert verdicts(results) == [Verdict.FS_CORRUPT, Verdict.CLEAN, Verdict.DATA_LOSS, Verdict.UNMOUNTABLE]
    first, fresh = backend.guests
    assert attached(first) == [str(results[0].state.disk)]
    assert not any(c.startswith(": detach ") for c in first.commands)
    assert len(attached(fresh)) == 3


def test_a_detach_that_fails_keeps_the_verdict_and_costs_the_guest(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=PER_STATE - 1)], outcome_of)  # dies on the first detach
    results = hot_judged(rec, backend, tmp_path)
    assert verdicts(results) == EXPECTED
    first, fresh = backend.guests
    assert len(attached(first)) == 1 and len(attached(fresh)) == 3


def test_a_guest_that_never_boots_costs_its_state_and_the_next_boot_checks_the_rest(rec, tmp_path):
    backend = FakeBackend([Plan(boots=False)], outcome_of)
    results = hot_judged(rec, backend, tmp_path)
    assert verdicts(results) == [Verdict.INFRA_ERROR, Verdict.CLEAN, Verdict.DATA_LOSS, Verdict.UNMOUNTABLE]
    assert "never boots" in results[0].verdict.reason


def test_guests_that_keep_failing_to_boot_leave_the_rest_infra_errors(rec, tmp_path):
    backend = FakeBackend([Plan(boots=False)] * 2, outcome_of)
    results = hot_judged(rec, backend, tmp_path)
    assert verdicts(results) == [Verdict.INFRA_ERROR] * 4
    assert len(backend.guests) == 2, "no boot is tried after two failed in a row"


def test_two_workers_share_the_states_each_on_its_own_guest(rec, tmp_path):
    both_busy, calls = threading.Barrier(2, timeout=10), itertools.count()

    def together(image):
        if next(calls) < 2:  # the first two checks wait for each other: both workers are busy
            both_busy.wait()
        return outcome_of(image)

    backend = FakeBackend([], together)
    results = hot_judged(rec, backend, tmp_path, workers=2)
    assert verdicts(results) == EXPECTED
    assert len(backend.guests) == 2
    assert sorted(p for g in backend.guests for p in attached(g)) == sorted(str(r.state.disk) for r in results)


def test_a_state_with_an_external_log_plugs_both_disks_and_names_the_log(tmp_path):
    data, log = tmp_path / "data.img", tmp_path / "log.img"
    data.write_bytes(b"data")
    log.write_bytes(b"log")
    backend = FakeBackend([], lambda image: Outcome())
    checker = Checker(Rig(IMAGE, Accel.TCG, backend), XFS, plug="hot")
    [obs] = checker.check([CrashState.of(data, log)], collect=["none"])
    assert obs.mount_rc == 0
    [guest] = backend.guests
    assert attached(guest) == [str(data), str(log)]
    check = next(c for c in guest.commands if c.startswith("pp-check "))
    assert check.split(";")[0].split()[2:] == ["/dev/sda", "pp", "none", "/dev/sdb"]
    assert sum(c.startswith(": detach ") for c in guest.commands) == 2


def test_a_report_and_the_file_after_it_come_apart_by_the_announced_length():
    tar = b"pp/f1\n\0blob_bytes=3\nbinary"
    text, blob = split_blob(b"mount_rc=0\nblob_bytes=%d\n---dmesg\n" % len(tar) + tar)
    assert blob == tar
    assert parse_report(text)[0]["blob_bytes"] == str(len(tar))
    assert split_blob(b"mount_rc=32\n---dmesg\n") == ("mount_rc=32\n---dmesg\n", b"")


def test_a_report_shorter_than_its_file_is_a_guest_error():
    with pytest.raises(GuestError):
        split_blob(b"blob_bytes=99\nshort")


def test_a_disk_wait_refuses_words_it_would_paste_into_the_guest_shell():
    assert "d0=$(await_disk plugpull3 present" in await_disk_command("plugpull3", "d0")
    with pytest.raises(ValueError):
        await_disk_command("plugpull3; reboot", "d0")


def test_a_disk_lookup_never_names_a_glob_that_matched_no_disk(tmp_path):
    """When no disk is there yet the glob stays unexpanded; expanded later (a disk showed up
    meanwhile, here a serial_of that matches anything) it must not come back as the name."""
    functions = DISK_FUNCTIONS.replace("/sys/block/", f"{tmp_path}/")
    racing = functions + "serial_of() { echo plugpull0; }; lookup plugpull0"
    found = subprocess.run(["sh", "-c", racing], capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == ""
    (tmp_path / "sdb").mkdir()
    assert subprocess.run(["sh", "-c", racing], capture_output=True, text=True).stdout == "sdb\n"
