"""minimise() end to end with a fake checker: a state is unmountable when it holds one
planted volatile write; resumable, nothing judged twice, and the minimised artifact replays."""

import json

import pytest

from plugpull.check.verdict import Observation
from plugpull.crash import crashrun as crash
from plugpull.crash.record import Record
from plugpull.crash.artifacts import save_record
from plugpull.minimise import culprits as minimise_module
from plugpull.minimise.artifact import write_artifact
from plugpull.minimise.culprits import CACHE, NotMinimisable, minimise
from plugpull.powerloss.crashstate import CrashState, materialize
from plugpull.powerloss.models import plan
from plugpull.powerloss.writelog import LogWriter, iter_entries
from plugpull.testbed.workloads import workload

MODEL, CUT_SEED = "reorder", 3
MARK = b"\xee" * 512


class FakeChecker:
    """Judges a state by its bytes: unmountable when sector 4000 holds MARK."""

    batches: list = []
    interrupt_at: int | None = None

    def __init__(self, rig, fs, batch=16, workers=1):
        self.fs = fs

    def check(self, states, progress=None, collect=None):
        FakeChecker.batches.append(len(states))
        if FakeChecker.interrupt_at == len(FakeChecker.batches):
            raise KeyboardInterrupt
        out = []
        for state in states:
            with open(state.disk, "rb") as f:
                f.seek(4000 * 512)
                bad = f.read(512) == MARK
            out.append(Observation(mount_rc=32 if bad else 0, fsck_rc=0, mount_error="bad superblock" if bad else ""))
            if progress:
                progress()
        return out


@pytest.fixture
def fake(monkeypatch):
    FakeChecker.batches, FakeChecker.interrupt_at = [], None
    monkeypatch.setattr(minimise_module, "Checker", FakeChecker)
    monkeypatch.setattr(crash, "Checker", FakeChecker)
    return FakeChecker


def saved_state(tmp_path, planted: int) -> tuple:
    """A record of 60 volatile writes after a flush (the write `planted` marks sector 4000),
    and the saved reorder state that keeps it."""
    work = tmp_path / "rec"
    work.mkdir()
    with open(work / "base.img", "wb") as f:
        f.truncate(4 << 20)
    with LogWriter(work / "write.log") as log:
        for i in range(10):
            log.write(8 * i, bytes([i + 1]) * 4096)
        log.flush()
        for i in range(60):
            log.write(4000 if i == planted else 100 + 8 * i, MARK if i == planted else bytes([i]) * 512)
    wl = workload("fsync-files", count=5)
    Record(work, {"fs": "ext4", "mode": "nobarrier", "workload": wl.name, "params": wl.params(),
                  "disk_mib": 4, "bus": "ahci", "kernel": "6.1.0-test", "packages": {"e2fsprogs": "1.47"}},
           []).save()
    rec = Record.load(work)
    entries = list(iter_entries(rec.log))
    seed = next(s for s in range(100) if 11 + planted in {p.entry_index for p in plan(entries, len(entries), MODEL, s)})
    materialize(rec.base, rec.log, plan(entries, len(entries), MODEL, seed), tmp_path / "s.img", digest=False)
    state_dir = tmp_path / "run" / "states" / "reorder-cut71"
    state_dir.mkdir(parents=True)
    save_record(rec, tmp_path / "run" / "record-x")
    doc = {"fs": "ext4", "mode": "nobarrier", "workload": wl.name, "model": MODEL, "cut": len(entries),
           "seed": seed, "digest": CrashState.of(tmp_path / "s.img").digest(), "verdict": "unmountable",
           "record": "../../record-x"}
    (state_dir / "state.json").write_text(json.dumps(doc))
    return state_dir, 11 + planted


def test_the_planted_write_is_found_and_the_minimised_state_replays(tmp_path, fake):
    state_dir, culprit = saved_state(tmp_path, planted=37)
    found = minimise(state_dir, None, tmp_path / "scratch", workers=1, batch=4)
    assert found.reference == "drop-unflushed"
    assert found.culprits == ((0, culprit),)
    assert found.answer["verdict"] == "unmountable"
    assert max(fake.batches) <= 4
    judged = json.loads((state_dir / CACHE).read_text())["judged"]
    assert len(judged) == found.checks == sum(fake.batches)

    small = write_artifact(found, tmp_path / "min", tmp_path / "scratch2")
    state = json.loads((small / "state.json").read_text())
    assert state["cut"] == 1 and state["model"] == "prefix"
    assert state["minimised"]["culprits"][0]["offset"] == 4000 * 512
    assert state["minimised"]["legality"]["legal"]
    replayed = crash.replay(small, None, tmp_path / "replay")
    assert replayed["verdict"] == "unmountable"
    assert replayed["digest"] == replayed["digest_expected"]
    text = (small / "summary.txt").read_text()
    assert f"plugpull replay {small}" in text and "byte 2048000" in text and "6.1.0-test" in text


def test_an_interrupted_run_resumes_without_judging_again(tmp_path, fake):
    state_dir, culprit = saved_state(tmp_path, planted=5)
    fake.interrupt_at = 3
    with pytest.raises(KeyboardInterrupt):
        minimise(state_dir, None, tmp_path / "scratch", workers=1, batch=2)
    before = len(json.loads((state_dir / CACHE).read_text())["judged"])
    assert before > 0
    fake.interrupt_at = None
    found = minimise(state_dir, None, tmp_path / "scratch", workers=1, batch=2)
    assert found.culprits == ((0, culprit),)
    assert found.judged == before + found.checks


def test_a_state_whose_verdict_does_not_reproduce_is_not_minimised(tmp_path, fake):
    state_dir, _ = saved_state(tmp_path, planted=5)
    doc = json.loads((state_dir / "state.json").read_text())
    (state_dir / "state.json").write_text(json.dumps({**doc, "verdict": "data-loss"}))
    with pytest.raises(NotMinimisable, match="does not reproduce"):
        minimise(state_dir, None, tmp_path / "scratch", workers=1)
