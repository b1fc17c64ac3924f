"""What drives guests, tested on the fake backend: guests that die, never boot, or lose
their ack stream. No VM; a tiny synthetic record stands in for a recorded workload."""

import time
from dataclasses import replace
from pathlib import Path

import pytest
from tests.fake_backend import FakeBackend, FakeGuest, Outcome, Plan

from plugpull.check.checker import Checker
from plugpull.check.verdict import Ack, Verdict
from plugpull.crash.judge import StateJob, judge
from plugpull.crash.record import Record, Trigger, record
from plugpull.crash.crashrun import CrashSpec, check_states, replay
from plugpull.errors import InfraError
from plugpull.guest.contract.backend import Guest
from plugpull.guest.contract.config import Accel, MachineSpec
from plugpull.guest.image.build import GuestImage
from plugpull.guest.qemu.machine import Machine
from plugpull.guest.rig import Rig
from plugpull.powerloss.writelog import LogWriter, iter_entries
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.bed import MOUNTPOINT
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.workloads import FsyncFiles

XFS = filesystem("xfs")
WL = FsyncFiles(count=4, seed=1)
SECTOR = 512
IMAGE = GuestImage("fake", Path("/nonexistent/kernel"), Path("/nonexistent/initramfs"), "6.1.0-fake")


def label(i: int) -> bytes:
    return f"write {i}".encode().ljust(SECTOR, b"\0")


@pytest.fixture
def rec(tmp_path) -> Record:
    """Four rounds of (write sector 0 with label i, flush); ack i after round i's flush."""
    d = tmp_path / "record"
    d.mkdir()
    (d / "base.img").write_bytes(bytes(64 << 10))
    with LogWriter(d / "write.log") as log:
        for i in range(1, 5):
            log.write(0, label(i))
            log.flush()
    r = Record(d, {"workload": WL.name, "params": WL.params()}, [Ack(i, 0, 2 * i) for i in range(1, 5)])
    r.save()
    return r


def outcome_of(image) -> Outcome:
    """Reads the state's label as a checker would read its filesystem: after round 3 an
    acked file is missing, after round 4 the state does not mount."""
    with open(image, "rb") as f:
        i = int(f.read(SECTOR).rstrip(b"\0").split()[1])
    if i == 4:
        return Outcome(mount_rc=32)
    return Outcome(files={WL.path(n): WL.content(n) for n in range(1, i + 1) if not (i == 3 and n == 2)})


ROUNDS = [StateJob("prefix", 2 * i) for i in range(1, 5)]  # the state after each round's flush


def judged(rec, backend, tmp_path, batch):
    checker = Checker(Rig(IMAGE, Accel.TCG, backend), XFS, batch=batch)
    return judge(rec, ROUNDS, checker, WL, seed=1, state_dir=tmp_path / "states")


def test_a_guest_that_dies_mid_batch_is_replaced_and_the_fresh_guest_judges_that_state_again(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=2)], outcome_of)  # disk listing, check of the first state
    results = judged(rec, backend, tmp_path, batch=4)
    assert [r.verdict.verdict for r in results] == [Verdict.CLEAN, Verdict.CLEAN, Verdict.DATA_LOSS,
                                                   Verdict.UNMOUNTABLE]
    first, fresh = backend.guests
    assert [d.path for d in fresh.spec.disks] == [r.state.disk for r in results[1:]]
    assert not first.alive() and not fresh.alive()


def test_a_state_the_rig_fails_on_twice_is_an_infra_error_and_the_rest_are_judged(rec, tmp_path):
    backend = FakeBackend([Plan(dies_after=2), Plan(dies_after=1)], outcome_of)  # the retry dies too
    results = judged(rec, backend, tmp_path, batch=4)
    assert [r.verdict.verdict for r in results] == [Verdict.CLEAN, Verdict.INFRA_ERROR, Verdict.DATA_LOSS,
                                                   Verdict.UNMOUNTABLE]
    assert "checker guest failed" in results[1].verdict.reason
    assert len(backend.guests) == 3


def test_a_guest_that_never_boots_gives_infra_error_for_all_its_states(rec, tmp_path):
    backend = FakeBackend([Plan(boots=False)], outcome_of)
    results = judged(rec, backend, tmp_path, batch=2)
    assert [r.verdict.verdict for r in results] == [Verdict.INFRA_ERROR, Verdict.INFRA_ERROR, Verdict.DATA_LOSS,
                                                   Verdict.UNMOUNTABLE]
    assert all("never boots" in r.verdict.reason for r in results[:2])
    assert len(backend.guests) == 2 and backend.guests[0].commands == []


def test_healthy_guests_give_the_verdicts_of_the_disks(rec, tmp_path):
    results = judged(rec, FakeBackend([], outcome_of), tmp_path, batch=3)
    assert [r.verdict.verdict for r in results] == [Verdict.CLEAN, Verdict.CLEAN, Verdict.DATA_LOSS,
                                                   Verdict.UNMOUNTABLE]
    assert [r.owed for r in results] == [[1], [1, 2], [1, 2, 3], [1, 2, 3, 4]]
    assert [r.state.disk.read_bytes()[:SECTOR] for r in results] == [label(i) for i in range(1, 5)]


def test_engine_saves_the_unsafe_states_and_replay_rebuilds_and_rejudges_them(rec, tmp_path):
    rig = Rig(IMAGE, Accel.TCG, FakeBackend([], outcome_of))
    spec = CrashSpec(fs="xfs", workload=WL.name, params=(("count", 4),), models=("prefix",), batch=4, workers=1)
    results = check_states(rec, list(iter_entries(rec.log)), ROUNDS, spec, rig, tmp_path / "states", WL, XFS,
                           tmp_path / "out")
    assert [r.verdict for r in results] == ["clean", "clean", "data-loss", "unmountable"]
    assert [r.acks_required for r in results] == [1, 2, 3, 4]
    assert list((tmp_path / "states").iterdir()) == [], "the states are removed once judged"
    saved = [Path(r.artifact) for r in results if r.artifact]
    assert [p.name for p in saved] == ["prefix-cut6", "prefix-cut8"]
    for artifact in saved:
        again = replay(artifact, rig, tmp_path / f"replay-{artifact.name}")
        assert again["digest"] == again["digest_expected"]
        assert again["verdict"] == again["verdict_expected"]


def record_on(backend, tmp_path, trigger="acks:3"):
    rig = Rig(IMAGE, Accel.TCG, backend)
    bed = BedSpec(filesystem("ext4"), mode("barrier"), WL, disk_mib=64)
    return record(tmp_path / "rec", bed, Trigger.parse(trigger), rig, timeout=20)


def test_recorder_reports_an_infra_error_when_the_ack_stream_closes_before_the_cut(tmp_path):
    backend = FakeBackend([Plan(ack_lines=("ack 1",), acks_end=True)])
    started = time.monotonic()
    with pytest.raises(InfraError, match="ack stream closed before the power cut"):
        record_on(backend, tmp_path)
    assert time.monotonic() - started < 10
    [guest] = backend.guests
    assert not guest.alive() and not guest.power_was_cut
    assert not (tmp_path / "rec" / "record.json").exists()


def test_recorder_cuts_the_power_at_the_trigger(tmp_path):
    backend = FakeBackend([Plan(ack_lines=("ack 1", "ack 2", "ack 3", "ack 4"))])
    rec = record_on(backend, tmp_path)
    [guest] = backend.guests
    assert guest.power_was_cut
    assert [a.ident for a in rec.acks] == [1, 2, 3]
    assert guest.files["/tmp/workload.sh"] == WL.script(MOUNTPOINT).encode()
    assert not any("<<" in c for c in guest.commands), "the script goes up with write_file"


def test_both_backends_meet_the_contract():
    assert isinstance(Machine(MachineSpec(), IMAGE, Accel.TCG), Guest)
    assert isinstance(FakeGuest(MachineSpec(), Plan(), lambda p: Outcome(), Accel.TCG, None, "g"), Guest)
    assert not isinstance(object(), Guest)


def test_after_a_failed_unmount_the_rest_of_the_batch_goes_to_a_fresh_guest(rec, tmp_path):
    """A state left mounted would make the next one (same UUID) fail to mount: a false verdict."""
    def stuck_on_the_first(image):
        outcome = outcome_of(image)
        return replace(outcome, umount_rc=32) if set(outcome.files) == {WL.path(1)} else outcome

    backend = FakeBackend([], stuck_on_the_first)
    results = judged(rec, backend, tmp_path, batch=4)
    assert [r.verdict.verdict for r in results] == [Verdict.FS_CORRUPT, Verdict.CLEAN, Verdict.DATA_LOSS,
                                                   Verdict.UNMOUNTABLE]
    assert len(backend.guests) == 2
