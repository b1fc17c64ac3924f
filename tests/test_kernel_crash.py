"""A kernel crash is a verdict, not a harness failure: the checker and the recorder judge a
guest that fails by its console, on the fake backend. No VM."""

import pytest
import test_backend
from fake_backend import FakeBackend, Plan
from test_backend import WL, XFS, judged, outcome_of
from test_console import NULL_DEREF, PANIC

from plugpull.lab.checker import observation_from, parse_report
from plugpull.lab.verdict import Verdict, classify


@pytest.fixture
def rec(tmp_path):
    return test_backend.rec.__wrapped__(tmp_path)


# the disk listing, then pp-check and the tar of a first state: the guest fails on the second
ON_THE_SECOND_STATE = 3


def test_a_panic_on_the_console_makes_that_state_kernel_crash_and_the_rest_are_judged(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=ON_THE_SECOND_STATE, console=PANIC)], outcome_of)
    results = judged(rec, backend, tmp_path, batch=4)
    assert [r.verdict.verdict for r in results] == [Verdict.CLEAN, Verdict.KERNEL_CRASH, Verdict.DATA_LOSS,
                                                   Verdict.UNMOUNTABLE]
    crashed = results[1]
    assert crashed.verdict.reason == "kernel panic: Kernel panic - not syncing: sysrq triggered crash"
    assert "dump_stack_lvl" in crashed.observation.kernel_excerpt
    assert len(backend.guests) == 2, "the rest of the batch went to a fresh guest"


def test_a_guest_that_dies_with_a_quiet_console_stays_an_infra_error(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=ON_THE_SECOND_STATE, console="[ 9.0] XFS (sdb): Ending clean mount\n")],
                          outcome_of)
    results = judged(rec, backend, tmp_path, batch=4)
    assert results[1].verdict.verdict is Verdict.INFRA_ERROR
    assert results[1].observation.kernel_crash == ""


def test_a_check_that_times_out_is_a_hang_not_an_infra_error(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=ON_THE_SECOND_STATE, hangs=True)], outcome_of)
    results = judged(rec, backend, tmp_path, batch=4)
    assert [r.verdict.verdict for r in results] == [Verdict.CLEAN, Verdict.KERNEL_CRASH, Verdict.DATA_LOSS,
                                                   Verdict.UNMOUNTABLE]
    assert results[1].verdict.reason.startswith("kernel hung: the check did not finish in")


def test_a_hang_with_a_blocked_task_on_the_console_reports_the_task(rec, tmp_path):
    blocked = "[  242.0] INFO: task mount:233 blocked for more than 120 seconds.\n"
    backend = FakeBackend([Plan(dies_after=ON_THE_SECOND_STATE, hangs=True, console=blocked)], outcome_of)
    results = judged(rec, backend, tmp_path, batch=4)
    assert results[1].verdict.reason == "kernel hung: INFO: task mount:233 blocked for more than 120 seconds."


def report_with_dmesg(dmesg: str) -> str:
    return f"mount_rc=0\ncollect_rc=0\numount_rc=0\nfsck_rc=0\n---fsck\n---mount\n---dmesg\n{dmesg}"


def test_an_oops_the_checker_guest_survived_is_kernel_crash():
    obs = observation_from(*parse_report(report_with_dmesg(NULL_DEREF)), files={})
    verdict = classify(XFS, obs, WL, [])
    assert verdict.verdict is Verdict.KERNEL_CRASH
    assert "NULL pointer dereference" in verdict.reason
    assert "Oops: 0000" in obs.kernel_excerpt


def test_a_quiet_kernel_log_leaves_the_verdict_to_the_filesystem():
    obs = observation_from(*parse_report(report_with_dmesg("[ 3.3] XFS (sdb): Ending clean mount\n")), files={})
    assert classify(XFS, obs, WL, []).verdict is Verdict.CLEAN
