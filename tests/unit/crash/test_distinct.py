"""Distinct states: cuts whose plans persist the same pieces are checked once and each is
classified by the acks it owes itself; a budget spends distinct states where bugs cluster.
No VM: hand-built logs and the fake backend."""

import shlex
from pathlib import Path

import pytest
from tests.fake_backend import FakeBackend, Outcome

from plugpull.check.checker import Checker
from plugpull.check.verdict import Ack, Verdict
from plugpull.crash.judge import StateJob, judge, plan_states
from plugpull.crash.record import Record
from plugpull.crash.crashrun import CrashSpec, candidates, check_states, crash_jobs, within_budget
from plugpull.errors import UsageError
from plugpull.guest.contract.config import Accel
from plugpull.guest.rig import Rig
from plugpull.powerloss.cuts import EXHAUSTIVE_MAX, near_events, spending_order
from plugpull.powerloss.writelog import FLUSH, LogEntry, LogWriter, iter_entries
from plugpull.results import CrashRun, CrashSummary, CrashTiming
from tests.unit.guest.test_backend import IMAGE, SECTOR, WL, XFS, label

# W W F W W W F W F W W: three flushes among eight writes
SHAPE = "WWFWWWFWFWW"


def hand_log(shape: str = SHAPE) -> list[LogEntry]:
    return [LogEntry(i, 8 * i, 0 if c == "F" else 8, FLUSH if c == "F" else 0, 0, 0) for i, c in enumerate(shape)]


def rec_of(tmp_path: Path, acks=()) -> Record:
    return Record(tmp_path, {}, list(acks))


def every_cut(models, entries) -> list[StateJob]:
    return [StateJob(m, c) for m in models for c in range(len(entries) + 1)]


def test_drop_unflushed_over_three_flushes_has_four_distinct_states_for_twelve_cuts(tmp_path):
    entries = hand_log()
    planned = plan_states(rec_of(tmp_path), every_cut(["drop-unflushed"], entries), 1, entries)
    assert len(planned.which) == 12
    assert len(planned.plans) == 4, "nothing flushed, and what each of the three flushes covers"
    assert planned.which == [0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3]


def test_prefix_has_a_state_per_write_and_shares_states_with_drop_unflushed(tmp_path):
    entries = hand_log()
    prefix = plan_states(rec_of(tmp_path), every_cut(["prefix"], entries), 1, entries)
    assert len(prefix.plans) == 1 + SHAPE.count("W"), "a flush adds no piece"
    both = plan_states(rec_of(tmp_path), every_cut(["prefix", "drop-unflushed"], entries), 1, entries)
    assert len(both.plans) == len(prefix.plans), "every drop-unflushed state is some prefix state"


def test_reorder_plans_of_one_epoch_differ_by_cut(tmp_path):
    """A seeded subset per cut: same-epoch cuts are distinct unless the coin tosses agree."""
    entries = hand_log("F" + "W" * 10)
    planned = plan_states(rec_of(tmp_path), every_cut(["reorder"], entries), 1, entries)
    assert 1 < len(planned.plans) <= 12


@pytest.fixture
def rec(tmp_path) -> Record:
    """W1 F W2 F W3 F; ack 1 is owed from cut 2 (after the first flush), and ack 2 from cut 3,
    before its write is flushed: a state that drops the unflushed W2 has lost it."""
    d = tmp_path / "record"
    d.mkdir()
    (d / "base.img").write_bytes(bytes(64 << 10))
    with LogWriter(d / "write.log") as log:
        for i in range(1, 4):
            log.write(0, label(i))
            log.flush()
    r = Record(d, {"workload": WL.name, "params": WL.params()}, [Ack(1, 0, 2), Ack(2, 0, 3)])
    r.save()
    return r


def outcome_of(image) -> Outcome:
    """The files of the rounds up to the label in sector 0 (none on the base image)."""
    with open(image, "rb") as f:
        words = f.read(SECTOR).rstrip(b"\0").split()
    last = int(words[1]) if words else 0
    return Outcome(files={WL.path(n): WL.content(n) for n in range(1, last + 1)})


# prefix at cut 1 and drop-unflushed at cuts 2 and 3 all persist W1 alone; they owe
# nothing, ack 1, and acks 1 and 2
SHARED = [StateJob("prefix", 1), StateJob("drop-unflushed", 2), StateJob("drop-unflushed", 3)]


def checks(backend) -> list[list[str]]:
    return [shlex.split(c.split(";", 1)[0]) for g in backend.guests for c in g.commands if c.startswith("pp-check ")]


def test_a_repeated_plan_is_checked_once_and_every_cut_gets_its_own_verdict(rec, tmp_path):
    backend = FakeBackend([], outcome_of)
    checker = Checker(Rig(IMAGE, Accel.TCG, backend), XFS, batch=4)
    judged = judge(rec, SHARED + [StateJob("prefix", 6)], checker, WL, seed=1, state_dir=tmp_path / "states")
    assert len(checks(backend)) == 2, "two distinct states, each checked once"
    assert [j.distinct for j in judged] == [0, 0, 0, 1]
    assert [j.owed for j in judged] == [[], [1], [1, 2], [1, 2]]
    assert [j.verdict.verdict for j in judged] == [Verdict.CLEAN, Verdict.CLEAN, Verdict.DATA_LOSS, Verdict.CLEAN]
    assert judged[0].observation is judged[2].observation and judged[0].state is judged[2].state


def test_a_shared_state_brings_back_what_its_most_demanding_cut_needs(rec, tmp_path):
    """The first cut owes nothing ("none" would bring no files back); the others owe acks."""
    backend = FakeBackend([], outcome_of)
    judge(rec, SHARED, Checker(Rig(IMAGE, Accel.TCG, backend), XFS), WL, seed=1, state_dir=tmp_path / "states")
    [check] = checks(backend)
    assert check[4] == WL.collect != "none"


def test_the_engine_reports_every_cut_and_the_distinct_state_it_shares(rec, tmp_path):
    rig = Rig(IMAGE, Accel.TCG, FakeBackend([], outcome_of))
    spec = CrashSpec(fs="xfs", workload=WL.name, params=(("count", 4),), batch=4, workers=1)
    results = check_states(rec, list(iter_entries(rec.log)), SHARED, spec, rig, tmp_path / "states", WL, XFS,
                           tmp_path / "out")
    assert [(r.cut, r.distinct, r.verdict, r.acks_required) for r in results] == [
        (1, 0, "clean", 0), (2, 0, "clean", 1), (3, 0, "data-loss", 2)]
    assert Path(results[2].artifact).name == "drop-unflushed-cut3"
    run = CrashRun(spec=spec.to_json(), record={}, states=tuple(results), timing=CrashTiming(1.0, 1.0, 3.0, 1.0))
    summary = run.crash_summary()
    assert (summary.states, summary.distinct) == (3, 1)
    assert CrashSummary.from_json(summary.to_json()) == summary


def test_spending_order_starts_with_the_kill_point_then_the_cuts_next_to_flushes_and_acks():
    entries = hand_log("W" * 20 + "F" + "W" * 20)
    acks = [Ack(1, 0, 30)]
    order = spending_order(range(len(entries) + 1), entries, acks, seed=1)
    assert sorted(order) == list(range(len(entries) + 1)) and order[0] == len(entries)
    assert set(order[1:5]) == {20, 21, 29, 30}, "around the flush at 20 and the ack at 30"
    assert order == spending_order(range(len(entries) + 1), entries, acks, seed=1)
    assert order[5:] != spending_order(range(len(entries) + 1), entries, acks, seed=2)[5:]
    assert near_events(entries, acks) == [(20, 21), (29, 30)]


def test_spending_order_keeps_each_events_two_cuts_together():
    entries = hand_log("W" * 9 + ("F" + "W" * 9) * 5)
    order = spending_order(range(len(entries) + 1), entries, [], seed=3)
    firsts = order[1:11]
    assert all(firsts[i + 1] == firsts[i] + 1 for i in range(0, 10, 2))
    assert all(entries[c].is_flush for c in firsts[::2])


def test_a_budget_caps_distinct_states_and_takes_the_cuts_that_share_them_free(tmp_path):
    """Under prefix the cuts just before and after a flush persist the same writes."""
    entries = hand_log()
    jobs = candidates(["prefix"], spending_order(range(len(entries) + 1), entries, [], seed=1))
    kept = within_budget(rec_of(tmp_path), entries, jobs, budget=2, seed=1)
    assert kept == jobs[:3] and kept[2].cut == kept[1].cut + 1 and entries[kept[1].cut].is_flush
    assert len(plan_states(rec_of(tmp_path), kept, 1, entries).plans) == 2
    assert len(plan_states(rec_of(tmp_path), jobs[:4], 1, entries).plans) == 3, "the walk stops at a third"
    everything = within_budget(rec_of(tmp_path), entries, jobs, budget=100, seed=1)
    assert everything == jobs


def spec_for(**changes) -> CrashSpec:
    return CrashSpec(models=("prefix", "drop-unflushed"), **changes)


def test_the_engine_with_a_budget_checks_at_most_that_many_distinct_states(tmp_path):
    entries = hand_log()
    jobs = crash_jobs(rec_of(tmp_path), entries, spec_for(budget=3), spec_for().resolve().models)
    assert len(plan_states(rec_of(tmp_path), jobs, 1, entries).plans) == 3
    assert jobs == sorted(jobs, key=lambda j: (j.model != "prefix", j.cut))
    assert StateJob("prefix", len(entries)) in jobs, "the kill point is spent first"


def test_exhaustive_checks_every_cut_under_every_model_of_a_small_log(tmp_path):
    entries = hand_log()
    jobs = crash_jobs(rec_of(tmp_path), entries, spec_for(exhaustive=True), spec_for().resolve().models)
    assert jobs == every_cut(["prefix", "drop-unflushed"], entries)


def test_exhaustive_refuses_a_log_too_big_without_a_budget_and_names_the_figure(tmp_path):
    entries = hand_log("W" * EXHAUSTIVE_MAX)
    with pytest.raises(UsageError, match=f"{EXHAUSTIVE_MAX + 1} cuts, {2 * (EXHAUSTIVE_MAX + 1)} states"):
        crash_jobs(rec_of(tmp_path), entries, spec_for(exhaustive=True), spec_for().resolve().models)
    jobs = crash_jobs(rec_of(tmp_path), entries, spec_for(exhaustive=True, budget=5), spec_for().resolve().models)
    assert len(plan_states(rec_of(tmp_path), jobs, 1, entries).plans) == 5


@pytest.mark.parametrize("changes, message", [({"budget": -1}, "--budget"),
                                              ({"exhaustive": True, "cuts": "flushes"}, "--exhaustive")])
def test_bad_budget_specs(changes, message):
    with pytest.raises(UsageError, match=message):
        CrashSpec(**changes).validate()


def test_a_case_file_gives_its_cells_a_budget_and_only_such_cells_name_one(tmp_path):
    from plugpull.runs.cases import load_case
    case = tmp_path / "c.toml"
    case.write_text('title = "t"\n[matrix]\nfs = ["xfs"]\nmodes = ["barrier"]\nworkloads = ["fsync-files"]\n')
    [plain] = load_case(case).cells
    case.write_text(case.read_text() + "[crash]\nbudget = 40\n")
    [budgeted] = load_case(case).cells
    assert budgeted.spec.budget == 40 and budgeted.to_json()["budget"] == 40
    assert "budget" not in plain.to_json() and plain.key() != budgeted.key()
