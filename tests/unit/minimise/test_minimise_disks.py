"""minimise() on a state cut on two disks (an md-raid1 stack, member 0 lost), with a fake
checker: the volatile set spans both logs, the culprit names its disk, and the minimised
artifact keeps both disks, the stack and the lost member, so replay rebuilds and rechecks it."""

import json
from dataclasses import replace

import pytest

from plugpull.check.verdict import Observation
from plugpull.crash import crashrun as crash
from plugpull.crash.judge import StateJob, build_state, disk_plans
from plugpull.crash.record import Record
from plugpull.crash.artifacts import load_state, save_record
from plugpull.minimise import culprits as minimise_module
from plugpull.minimise.artifact import write_artifact
from plugpull.minimise.culprits import minimise
from plugpull.minimise.explain import meanings
from plugpull.powerloss.crashstate import CrashState
from plugpull.powerloss.writelog import LogWriter, iter_entries
from plugpull.testbed.workloads import workload

MODEL = "reorder"
MARK = b"\xee" * 512
PLANTED = 23  # the volatile write on disk 1 that marks sector 4000


class TwoDiskChecker:
    """Unmountable when the second disk's sector 4000 holds MARK; keeps how it was made."""

    made: list = []

    def __init__(self, rig, fs, batch=16, workers=1, **assembly):
        TwoDiskChecker.made.append(assembly)
        self.fs = fs

    def check(self, states, progress=None, collect=None):
        out = []
        for state in states:
            assert len(state.images) == 2, "every candidate is on both disks"
            with open(state.images[1], "rb") as f:
                f.seek(4000 * 512)
                bad = f.read(512) == MARK
            out.append(Observation(mount_rc=32 if bad else 0, fsck_rc=0, mount_error="bad superblock" if bad else ""))
            if progress:
                progress()
        return out


@pytest.fixture
def fake(monkeypatch):
    TwoDiskChecker.made = []
    monkeypatch.setattr(minimise_module, "Checker", TwoDiskChecker)
    monkeypatch.setattr(crash, "Checker", TwoDiskChecker)
    return TwoDiskChecker


def write_disk(path, writes: int, planted: int | None = None) -> None:
    """Ten durable writes, a flush, then `writes` volatile ones (`planted` marks sector 4000)."""
    with LogWriter(path) as log:
        for i in range(10):
            log.write(8 * i, bytes([i + 1]) * 4096)
        log.flush()
        for i in range(writes):
            log.write(4000 if i == planted else 100 + 8 * i, MARK if i == planted else bytes([i + 2]) * 512)


def saved_two_disk_state(tmp_path) -> tuple:
    work = tmp_path / "rec"
    work.mkdir()
    for name in ("base.img", "base2.img"):
        with open(work / name, "wb") as f:
            f.truncate(4 << 20)
    write_disk(work / "write.log", 30)
    write_disk(work / "write2.log", 40, planted=PLANTED)
    ends = [sum(1 for _ in iter_entries(work / log)) for log in ("write.log", "write2.log")]
    wl = workload("fsync-files", count=5)
    Record(work, {"fs": "xfs", "mode": "nobarrier", "workload": wl.name, "params": wl.params(), "disk_mib": 4,
                  "bus": "ahci", "kernel": "6.1.0-test", "disks": 2, "cuts": [ends], "stack": "md-raid1"},
           []).save()
    rec = Record.load(work)
    every = [list(iter_entries(log)) for log in rec.logs]
    seed = next(s for s in range(100) if 11 + PLANTED in {p.entry_index for p in
                                                          disk_plans(every, StateJob(MODEL, ends[0], (ends[1],)), s)[1]})
    state = build_state(rec, disk_plans(every, StateJob(MODEL, ends[0], (ends[1],)), seed), tmp_path / "s.img")
    state_dir = tmp_path / "run" / "states" / f"reorder-cut{ends[0]}-{ends[1]}"
    state_dir.mkdir(parents=True)
    save_record(rec, tmp_path / "run" / "record-x")
    doc = {"fs": "xfs", "mode": "nobarrier", "workload": wl.name, "model": MODEL, "cut": ends[0], "cuts": ends,
           "seed": seed, "digest": state.digest(), "verdict": "unmountable", "record": "../../record-x",
           "lost_member": 0}
    state.remove()
    (state_dir / "state.json").write_text(json.dumps(doc))
    return state_dir


def test_the_culprit_on_disk_2_is_found_and_the_minimised_state_replays_on_both(tmp_path, fake):
    state_dir = saved_two_disk_state(tmp_path)
    found = minimise(state_dir, None, tmp_path / "scratch", workers=1, batch=4)
    assert len(found.variation.volatile) == 30 + 40, "the volatile set spans both logs"
    assert {d for d, _ in found.variation.volatile} == {0, 1}
    assert found.reference == "drop-unflushed"
    assert found.culprits == ((1, 11 + PLANTED),), "the planted write, named by its disk"
    assert all(str(made["stack"]) == "md-raid1" and made["lost"] == 0 for made in fake.made)

    small = write_artifact(found, tmp_path / "min", tmp_path / "scratch2")
    state = json.loads((small / "state.json").read_text())
    assert state["cuts"] == [0, 1] and state["lost_member"] == 0
    [row] = state["minimised"]["culprits"]
    assert row["disk"] == 1 and row["offset"] == 4000 * 512
    assert sorted(p.name for p in (small / "record").iterdir()) == [
        "base.qcow2", "base2.qcow2", "record.json", "write.log.gz", "write2.log.gz"]
    replayed = crash.replay(small, None, tmp_path / "replay")
    assert replayed["verdict"] == "unmountable"
    assert replayed["digest"] == replayed["digest_expected"]
    assert str(fake.made[-1]["stack"]) == "md-raid1" and fake.made[-1]["lost"] == 0, "replay assembles it as the run did"
    text = (small / "summary.txt").read_text()
    assert "disk 1 entry" in text and "through md-raid1, member 0 lost" in text


def test_a_state_whose_culprit_is_gone_from_disk_2_is_clean_when_rebuilt(tmp_path, fake):
    """The fake's failure depends on disk 2 alone: a candidate built without disk 2's volatile
    writes must pass, or the test above would find nothing."""
    state_dir = saved_two_disk_state(tmp_path)
    found = minimise(state_dir, None, tmp_path / "scratch", workers=1, batch=4)
    reference = found.variation.pieces("drop-unflushed", ())
    _, rec = load_state(state_dir, tmp_path / "load")
    state = build_state(rec, reference, tmp_path / "ref.img")
    try:
        [obs] = TwoDiskChecker(None, None).check([CrashState(state.images)])
    finally:
        state.remove()
    assert obs.mount_rc == 0


def test_writes_through_a_stack_are_not_explained_as_the_filesystem_s(tmp_path, fake):
    """A member disk's offsets are not the filesystem's: reading them as such would be wrong."""
    found = minimise(saved_two_disk_state(tmp_path), None, tmp_path / "scratch", workers=1, batch=4)
    on_disk_0 = replace(found, culprits=((0, 11),), doc={**found.doc, "fs": "ext4"})
    unstacked = replace(on_disk_0, record=replace(found.record, meta={**found.record.meta, "stack": ""}))
    assert meanings(unstacked, tmp_path), "without a stack, the write is read as the filesystem's"
    assert meanings(on_disk_0, tmp_path) == {}
