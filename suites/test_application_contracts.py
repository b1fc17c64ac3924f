"""Applications' own contracts, judged by the power-cut engine.

SQLite on one long-lived connection: in WAL mode with synchronous=FULL every commit is
durable; with NORMAL only what a checkpoint covered, so states may lose the last commits
(clean, counted as allowed) but never hold a hole or a torn row. Without barriers the
promises break. atomic-replace: with barriers the target always holds one whole version.
"""

import pytest

from plugpull.check.checker import Checker
from plugpull.crash.judge import judge
from plugpull.crash.record import record
from plugpull.crash.spec import CrashSpec

pytestmark = [pytest.mark.vm, pytest.mark.slow]

MODELS = ("drop-unflushed", "reorder")
STATES = 30
SQLITE = (("transactions", 30), ("checkpoint", 5))


def sqlite_spec(fs: str, mode: str, synchronous: str, models=MODELS, states=STATES) -> CrashSpec:
    return CrashSpec(fs=fs, mode=mode, workload="sqlite", params=SQLITE + (("synchronous", synchronous),),
                     models=models, states=states, seed=1, trigger="end")


def per_model(run) -> dict:
    out: dict = {}
    for s in run.states:
        out.setdefault(s.model, []).append(s)
    return out


def not_clean(states) -> list:
    return [(s.model, s.cut, s.verdict, s.reason) for s in states if s.verdict != "clean"]


@pytest.fixture(scope="module", params=["ext4", "xfs"])
def fs(request):
    return request.param


def test_wal_full_keeps_every_commit(crash_run, fs):
    run = crash_run(sqlite_spec(fs, "barrier", "full"))
    for model, states in per_model(run).items():
        assert len(states) >= STATES, model
        assert sum(s.acks_required for s in states) > 0, f"{model}: no state owed a commit"
    assert not_clean(run.states) == []
    assert sum(s.acks_allowed for s in run.states) == 0


def test_wal_normal_loses_only_what_its_contract_allows(crash_run, fs):
    run = crash_run(sqlite_spec(fs, "barrier", "normal"))
    for model, states in per_model(run).items():
        assert len(states) >= STATES, model
    assert run.summary["data-loss"] == 0 and run.summary["inconsistent"] == 0, not_clean(run.states)
    assert not_clean(run.states) == []
    allowed = [s for s in run.states if s.acks_allowed > 0]
    assert allowed, "no state lost a commit after its last checkpoint"
    assert all("as the contract allows" in s.reason for s in allowed)


def test_nobarrier_breaks_sqlite_promises(crash_run, fs):
    run = crash_run(sqlite_spec(fs, "nobarrier", "full", models=("drop-unflushed",), states=10))
    assert run.summary["clean"] < len(run.states), "every state was clean without barriers"
    assert run.summary["infra-error"] == 0


def test_sqlite_acks_follow_their_commits(rig, tmp_path):
    """A state cut exactly at an ack's stamp, holding only flushed writes, must hold the row:
    the ack line left the guest after its COMMIT (and its fsync) returned. An ack is stamped
    with the write log's position when the host reads it: under load the host may read two
    acks with no write logged between them, and both share one position; a state cut there
    owes both, so each state owes its own ack and every ack stamped at or before it."""
    plan = CrashSpec(fs="ext4", workload="sqlite", params=(("transactions", 8),), trigger="end").resolve()
    rec = record(tmp_path / "record", plan.recording_bed, plan.trigger, rig)
    promises = [a for a in rec.acks if a.kind == "ack"]
    assert [a.ident for a in promises] == list(range(1, 9))
    jobs = [("drop-unflushed", a.position) for a in promises]
    judged = judge(rec, jobs, Checker(rig, plan.fs, batch=len(jobs)), plan.workload, 1, tmp_path / "states")
    for j in judged:
        j.state.remove()
    positions = [a.position for a in promises]
    assert positions == sorted(positions), positions  # stamped in the order they were sent
    assert all(a.ident in j.owed for a, j in zip(promises, judged))
    assert [sorted(j.owed) for j in judged] == [[b.ident for b in promises if b.position <= a.position]
                                                 for a in promises]
    assert [(j.verdict.verdict, j.verdict.reason) for j in judged if j.verdict.verdict != "clean"] == []


def test_atomic_replace_with_barriers_holds_a_whole_version(crash_run):
    run = crash_run(CrashSpec(fs="ext4", mode="barrier", workload="atomic-replace", params=(("count", 20),),
                              models=MODELS, states=20, seed=1, trigger="end"))
    assert sum(s.acks_required for s in run.states) > 0
    assert not_clean(run.states) == []
