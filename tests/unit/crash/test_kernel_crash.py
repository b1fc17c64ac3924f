"""A kernel crash is a verdict, not a harness failure: the checker and the recorder judge a
guest that fails by its console, on the fake backend. No VM."""

import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.unit.guest import test_backend
from tests.fake_backend import FakeBackend, Plan
from tests.unit.guest.test_backend import IMAGE, ROUNDS, WL, XFS, judged, outcome_of, record_on
from tests.unit.check.test_console import HUNG, NULL_DEREF, PANIC

from plugpull.testbed.workloads import FsyncFiles

from plugpull.cli import main
from plugpull.crash.crashrun import CrashSpec, check_states, recording_crashed, run_crash
from plugpull.errors import GuestTimeout
from plugpull.guest.contract.config import Accel
from plugpull.powerloss.writelog import iter_entries

from plugpull.check.checker import Checker, observation_from, parse_report
from plugpull.check.verdict import Verdict, classify
from plugpull.crash.record import Trigger, record
from plugpull.guest.qemu.machine import create_disk
from plugpull.guest.rig import Rig
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode


@pytest.fixture
def rec(tmp_path):
    return test_backend.rec.__wrapped__(tmp_path)


# the disk listing, then pp-check of a first state (its tar comes with the report): the guest fails on the second
ON_THE_SECOND_STATE = 2


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
    quiet = "[ 9.0] XFS (sdb): Ending clean mount\n"
    backend = FakeBackend([Plan(dies_after=ON_THE_SECOND_STATE, console=quiet), Plan(dies_after=1, console=quiet)],
                          outcome_of)  # the state's second try dies too
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


# In a checker guest: a test-only hook runs a command before one state's check.

EXT4 = filesystem("ext4")


@pytest.fixture(scope="module")
def tiny_states(tmp_path_factory):
    """Three small, freshly made ext4 states: each is clean."""
    d = tmp_path_factory.mktemp("tiny")
    paths = [create_disk(d / f"s{i}.img", 16) for i in range(3)]
    for path in paths:
        subprocess.run(EXT4.mkfs_argv(str(path)), check=True, capture_output=True)
    return [CrashState.of(p) for p in paths]


def check_with(rig, states, hooks, **settings):
    checker = Checker(rig, EXT4, batch=len(states), hooks=hooks, **settings)
    observations = checker.check(states, collect=["none"] * len(states))
    return [(classify(EXT4, obs, WL, []), obs) for obs in observations]


@pytest.mark.vm
def test_a_panic_of_the_checker_kernel_is_that_states_kernel_crash(rig, tiny_states):
    judged_states = check_with(rig, tiny_states, {1: "echo c > /proc/sysrq-trigger"})
    assert [v.verdict for v, _ in judged_states] == [Verdict.CLEAN, Verdict.KERNEL_CRASH, Verdict.CLEAN]
    verdict, obs = judged_states[1]
    assert "sysrq triggered crash" in verdict.reason
    assert "Kernel panic - not syncing" in obs.kernel_excerpt


@pytest.mark.vm
def test_a_check_that_hangs_is_kernel_crash_hung(rig, tiny_states):
    judged_states = check_with(rig, tiny_states, {1: "sleep 3600"}, check_timeout=30)
    assert [v.verdict for v, _ in judged_states] == [Verdict.CLEAN, Verdict.KERNEL_CRASH, Verdict.CLEAN]
    assert judged_states[1][0].reason.startswith("kernel hung")


@dataclass
class Watched:
    """A backend that hands over each guest it makes, so a test can kill its QEMU."""

    inner: object
    guests: "queue.Queue" = field(default_factory=lambda: queue.Queue())
    name: str = "watched"

    def machine(self, *args, **kwargs):
        guest = self.inner.machine(*args, **kwargs)
        self.guests.put(guest)
        return guest


def kill_when_hooked(backend: Watched) -> None:
    """Wait for the first guest's hook to say it runs, then SIGKILL its QEMU from the host."""
    guest = backend.guests.get(timeout=600)
    while guest.acks is None:  # set as soon as QEMU runs
        time.sleep(0.1)
    assert guest.acks.get(timeout=600).text == "hooked"
    os.kill(guest.pid, signal.SIGKILL)


@pytest.mark.vm
def test_qemu_killed_during_a_check_is_no_verdict_and_the_state_is_judged_again(rig, tiny_states):
    backend = Watched(rig.backend)
    killer = threading.Thread(target=kill_when_hooked, args=(backend,), daemon=True)
    killer.start()
    watched = Rig(rig.image, rig.accel, backend)
    judged_states = check_with(watched, tiny_states[:2], {0: "echo hooked > /dev/plugpull-ack; sleep 3600"})
    killer.join(60)
    assert [v.verdict for v, _ in judged_states] == [Verdict.CLEAN, Verdict.CLEAN]
    assert backend.guests.qsize() == 1, "one fresh guest judged the killed guest's state again"


def test_a_panic_while_recording_is_a_finding_with_the_acks_so_far(tmp_path):
    backend = FakeBackend([Plan(ack_lines=("ack 1",), acks_end=True, console=PANIC)])
    rec = record_on(backend, tmp_path)
    assert rec.meta["kernel_crash"]["kind"] == "panic"
    assert "sysrq triggered crash" in rec.meta["kernel_crash"]["excerpt"]
    assert [a.ident for a in rec.acks] == [1]
    assert (tmp_path / "rec" / "record.json").is_file()


def test_a_hung_task_while_recording_ends_the_recording_before_its_timeout(tmp_path):
    backend = FakeBackend([Plan(ack_lines=("ack 1",), console=HUNG)])
    rec = record_on(backend, tmp_path)
    assert rec.meta["kernel_crash"]["kind"] == "hung"
    assert backend.guests[0].power_was_cut


def test_a_guest_that_only_runs_slowly_still_times_out_as_a_harness_failure(tmp_path):
    backend = FakeBackend([Plan(ack_lines=("ack 1",))])
    bed = BedSpec(filesystem("ext4"), mode("barrier"), WL, disk_mib=64)
    with pytest.raises(GuestTimeout, match="workload did not finish"):
        record(tmp_path / "rec", bed, Trigger.parse("acks:3"), Rig(IMAGE, Accel.TCG, backend), timeout=2)


def test_a_run_whose_recording_crashed_has_one_kernel_crash_result_and_keeps_the_console(tmp_path):
    rig = Rig(IMAGE, Accel.TCG, FakeBackend([Plan(ack_lines=("ack 1",), acks_end=True, console=PANIC)]))
    spec = CrashSpec(fs="ext4", workload=WL.name, params=(("count", 4),), models=("prefix",), trigger="acks:3",
                     disk_mib=64)
    run = run_crash(spec, rig, tmp_path / "out")
    [result] = run.states
    assert (result.model, result.verdict) == ("recording", "kernel-crash")
    assert result.reason == "while recording: kernel panic: Kernel panic - not syncing: sysrq triggered crash"
    assert "dump_stack_lvl" in result.kernel_excerpt
    assert recording_crashed(run) and run.summary["kernel-crash"] == 1
    assert run.crash_summary().unsafe == 1
    assert "Kernel panic" in (tmp_path / "out" / "recording-console.log").read_text()


def test_a_kernel_crash_state_keeps_its_console_words_in_its_result_and_its_artifact(rec, tmp_path):
    rig = Rig(IMAGE, Accel.TCG, FakeBackend([Plan(dies_after=ON_THE_SECOND_STATE, console=PANIC)], outcome_of))
    spec = CrashSpec(fs="xfs", workload=WL.name, params=(("count", 4),), models=("prefix",), batch=4, workers=1)
    results = check_states(rec, list(iter_entries(rec.log)), ROUNDS, spec, rig, tmp_path / "states", WL, XFS,
                           tmp_path / "out")
    crashed = results[1]
    assert crashed.verdict == "kernel-crash"
    assert "Kernel panic - not syncing" in crashed.kernel_excerpt
    saved = json.loads((Path(crashed.artifact) / "state.json").read_text())
    assert "Kernel panic - not syncing" in saved["evidence"]["kernel_crash"]
    assert saved["kernel_excerpt"] == crashed.kernel_excerpt
    assert results[0].kernel_excerpt is None


@dataclass(frozen=True)
class PanicsAfterTwoFiles(FsyncFiles):
    """fsync-files whose guest kernel panics after the second file's ack."""

    def script(self, mnt: str, ack: str = "/dev/plugpull-ack") -> str:
        return super().script(mnt, ack).replace("echo 'ack 2' >&4", "echo 'ack 2' >&4 && echo c > /proc/sysrq-trigger")


@pytest.mark.vm
def test_a_panic_of_the_recording_guest_ends_the_record_with_the_finding(rig, tmp_path):
    wl = PanicsAfterTwoFiles(count=5, seed=1)
    assert "sysrq-trigger" in wl.script("/mnt"), "the workload's script changed: the panic is not injected"
    bed = BedSpec(filesystem("ext4"), mode("barrier"), wl, disk_mib=64)
    rec = record(tmp_path / "rec", bed, Trigger.parse("acks:5"), rig, timeout=300)
    assert rec.meta["kernel_crash"]["kind"] == "panic"
    assert "sysrq triggered crash" in rec.meta["kernel_crash"]["line"]
    assert [a.ident for a in rec.acks] == [1, 2]


def test_plugpull_crash_exits_1_when_the_recording_guest_crashed(tmp_path, monkeypatch, capsys):
    rig = Rig(IMAGE, Accel.TCG, FakeBackend([Plan(ack_lines=("ack 1",), acks_end=True, console=PANIC)]))
    monkeypatch.setattr("plugpull.cli.crash.prepare_rig", lambda *args: rig)
    code = main(["crash", "--fs", "ext4", "--workload", "fsync-files", "--param", "count=4", "--model", "prefix",
                 "--trigger", "acks:3", "--disk-mib", "64", "--out", str(tmp_path / "out")])
    assert code == 1
    assert "while recording: kernel panic" in capsys.readouterr().out
