"""The hunt's parts that boot no guest: its cuts, its rules and summary, its CLI's refusals, its
chunks recorded and judged (a fake recorder). Its directory and journal: `test_hunt_out`."""

import argparse
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.cli_run import run_cli
from plugpull import cli
from plugpull.check.verdict import Ack
from plugpull.cli.hunt import budget, default_out
from plugpull.hunt.journal import JOURNAL, Journal
from plugpull.hunt.hunter import MODELS, point_jobs
from plugpull.hunt.summary import rules_broken, summary, workload_line
from plugpull.powerloss.cuts import POINT_CUTS, point_cuts
from plugpull.results import StateResult

SETTINGS_DOC = {"seq": 1, "ops": [], "sample": None, "seed": 1, "fs": "ext4", "mode": "barrier", "disk_mib": 64,
                "kernel": "6.1.0-x", "models": list(MODELS), "cuts": POINT_CUTS}


def entry(flush: bool = False):
    return SimpleNamespace(is_flush=flush)


def test_the_cuts_are_the_acks_the_flushes_and_the_end_from_ack_0_on():
    entries = [entry(True), entry(), entry(True), entry(), entry(True), entry(), entry(True), entry()]
    rec = SimpleNamespace(acks=[Ack(0, 0, 3), Ack(1, 0, 7)])
    assert point_cuts(entries, rec.acks) == [3, 4, 6, 7, 8]  # the setup's flushes (0, 2) are before ack 0
    jobs = point_jobs(rec, entries)
    assert len(jobs) == 5 * len(MODELS) and {j.model for j in jobs} == set(MODELS)


def test_with_no_flushes_the_cuts_are_the_acks_and_the_end():
    rec = SimpleNamespace(acks=[Ack(0, 0, 1), Ack(1, 0, 3)])
    assert point_cuts([entry()] * 4, rec.acks) == [1, 3, 4]


def judged(ident: str, failing: bool = False) -> dict:
    return {"id": ident, "ops": "creat A/foo", "states": 2, "distinct": 1, "verdicts": {"clean": 2}, "rules": {},
            "failing": failing, "reason": "", "artifact": None, "seconds": 0.1}


def test_a_lost_fact_names_its_rule_and_the_other_checks_name_theirs():
    lost = [{"ack": 1, "reason": "A/foo: size is 0, owed 4096 (fsync-data, point 1)"},
            {"ack": 1, "reason": "the file owed at A/bar is under none of A/bar (fsync-names, point 1)"}]
    assert rules_broken("data-loss", lost) == ["fsync-data", "fsync-names"]
    assert rules_broken("data-loss", [{"ack": 0, "reason": "the work directory is missing"}]) == ["data-loss"]
    assert [rules_broken(v, []) for v in ("inconsistent", "fs-corrupt", "unmountable", "kernel-crash")] == [
        ["inconsistent"], ["fsck"], ["mount"], ["kernel"]]
    assert rules_broken("clean", lost) == [] and rules_broken("infra-error", []) == []


def state(verdict: str, distinct: int, lost=()) -> StateResult:
    return StateResult(fs="ext4", mode="nobarrier", workload="gen:x", model="reorder", seed=1, cut=3,
                       verdict=verdict, reason=f"{verdict} here", acks_required=1, acks_lost=len(lost),
                       fsck_rc=0, lost=list(lost), distinct=distinct)


def test_a_workload_line_counts_verdicts_and_rules_and_fails_only_on_a_bad_state():
    loss = [{"ack": 1, "reason": "A/foo: digest is absent, owed 1234 (sync-all, point 1)"}]
    line = workload_line("seq1-000001", "creat A/foo, sync", [state("clean", 0), state("data-loss", 1, loss),
                                                             state("data-loss", 1, loss)], "failing/seq1-000001", 2.0)
    assert line["verdicts"] == {"clean": 1, "data-loss": 2} and line["rules"] == {"sync-all": 2}
    assert line["failing"] and line["distinct"] == 2 and line["reason"] == "data-loss here"
    clean = workload_line("seq1-000002", "mkdir A, sync", [state("clean", 0), state("infra-error", 1)], None, 1.0)
    assert not clean["failing"] and clean["rules"] == {}


def test_the_summary_lists_the_failing_workloads_as_findings():
    loss = [{"ack": 1, "reason": "A/foo: digest is 00, owed 11 (sync-all, point 1)"}]
    lines = [workload_line("seq1-000003", "creat A/foo, sync", [state("data-loss", 0, loss)], "failing/seq1-000003", 1),
             workload_line("seq1-000001", "mkdir A, sync", [state("data-loss", 0, loss), state("fs-corrupt", 1)],
                           "failing/seq1-000001", 1),
             workload_line("seq1-000002", "mkdir B, sync", [state("clean", 0)], None, 1)]
    text = summary(SETTINGS_DOC, lines, 356)
    assert "3 of 356 workloads, 4 states (4 distinct), 2 failing" in text
    assert "verdicts: clean 1, data-loss 2, fs-corrupt 1" in text
    body = text.split("findings: 2 from 2 failing workloads (by rule: sync-all 2, fsck 1)\n")[1].splitlines()
    assert body[0] == "finding 1: 1 workload: creat X/f, sync" and body[2] == "  rules: sync-all"
    assert body[5] == "    seq1-000003  creat A/foo, sync  (1 of 1 states)  failing/seq1-000003"
    assert body[6] == "finding 2: 1 workload: mkdir X, sync" and body[11].startswith("    seq1-000001  mkdir A, sync  (2 of 2")
    assert "seq1-000002" not in text


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("60m", 3600), ("1.5h", 5400), ("30s", 30), ("0.5m", 30)])
def test_a_budget_is_a_time_with_its_unit(text, seconds):
    assert budget(text) == seconds


@pytest.mark.parametrize("text", ["60", "0m", "-5m", "1d", "m", "8000h", "9" * 50 + "s", "0.001s", "29s", "0.4m"])
def test_a_budget_without_a_unit_or_out_of_range_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        budget(text)


def test_a_lying_disk_is_a_barrier_recording_judged_by_lying_models():
    from plugpull.hunt.hunter import HuntSpec
    lying, barrier = HuntSpec(1, mode="lying"), HuntSpec(1)
    assert lying.recording_mode.name == "barrier" and lying.models == tuple(f"{m}+lying" for m in MODELS)
    assert barrier.models == MODELS and lying.settings("k")["models"] != barrier.settings("k")["models"]


def test_the_default_out_names_the_hunt_so_the_same_command_goes_on():
    args = SimpleNamespace(seq=2, fs="btrfs", mode="barrier", ops=("rename", "fsync"), sample=2000, seed=3, kernel=None,
                           setup=None, shape=None)
    assert default_out(args, [None]) == Path("results/hunt-seq2-btrfs-barrier-rename+fsync-sample2000-seed3")
    unsynced = SimpleNamespace(**{**vars(args), "setup": "unsynced"})
    assert default_out(unsynced, [None]) == Path("results/hunt-seq2-btrfs-barrier-rename+fsync-unsynced-sample2000-seed3")
    links = SimpleNamespace(**{**vars(args), "setup": "links"})
    assert default_out(links, [None]) == Path("results/hunt-seq2-btrfs-barrier-rename+fsync-links-sample2000-seed3")
    other = SimpleNamespace(release="6.12.117-amd64")
    assert default_out(args, [other]) == Path("results/hunt-seq2-btrfs-barrier-rename+fsync-sample2000-seed3-6.12.117-amd64")
    both = default_out(args, [None, other])
    assert both == Path("results/hunt-seq2-btrfs-barrier-rename+fsync-sample2000-seed3-host+6.12.117-amd64")


def test_hunt_kernel_host_without_out_gets_as_far_as_the_guest(tmp_path, monkeypatch):
    """--kernel without --out named the default out dir from the option's text and failed
    (AttributeError, exit 3): it must reach the guest's start, here a stand-in that stops."""
    import plugpull.guest.rig as rig

    class Booted(BaseException):
        pass

    def stop(*a, **k):
        raise Booted
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rig, "prepare_rig", stop)
    with pytest.raises(Booted):
        cli.main(["hunt", "--seq", "1", "--sample", "1", "--kernel", "host"])


@pytest.mark.parametrize("argv, words", [
    (["hunt", "--seq", "4"], "expected 1, 2 or 3"),
    (["hunt"], "--seq"),
    (["hunt", "--seq", "1", "--sample", "1489"], "only 1488 workloads"),
    (["hunt", "--seq", "1", "--setup", "half"], "invalid choice"),
    (["hunt", "--seq", "1", "--ops", "frobnicate"], "unknown --ops name 'frobnicate'"),
    (["hunt", "--seq", "1", "--budget", "60"], "expected a time"),
    (["hunt", "--seq", "1", "--backend", "libvirt"], "its own QEMU"),
    (["hunt", "--seq", "1", "--fs", "zfs"], "unknown filesystem 'zfs'"),
    (["hunt", "--seq", "1", "--fs", "ext4+compress"], "option of f2fs, not of ext4"),
    (["hunt", "--seq", "1", "--mode", "extlog"], "records one disk"),
])
def test_bad_hunts_are_refused_in_one_line_before_anything_is_made(argv, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and words in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_a_foreign_out_dir_is_refused_and_left_as_it_was(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert cli.main(["hunt", "--seq", "1", "--out", str(tmp_path / "mine")]) == 2
    assert "not a hunt's directory" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]


class FakeRecorder:
    """Records nothing: each workload's outcome comes from `outcomes` (a Failed, or an error to raise)."""

    def __init__(self, outcomes):
        self.outcomes, self.boots = outcomes, 1

    def __call__(self, *args, **kwargs):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def close(self):
        pass

    def record(self, workload, directory):
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def fake_hunt(tmp_path, monkeypatch, outcomes, **spec):
    from plugpull.generate.space import Space
    from plugpull.hunt import hunter as hunter_mod
    monkeypatch.setattr(hunter_mod, "formatted", lambda *a: tmp_path / "mkfs.img")
    monkeypatch.setattr(hunter_mod, "Recorder", FakeRecorder(list(outcomes)))
    rig = SimpleNamespace(image=SimpleNamespace(kernel_release="6.1.0-x"))
    hunt_spec = hunter_mod.HuntSpec(1, **{"sample": 4, "chunk": 2, **spec})
    return hunter_mod.hunt(hunt_spec, Space(1), [rig], tmp_path / "h")


def test_a_harness_failure_is_journaled_unjudged_and_a_kernel_failure_is_a_finding(tmp_path, monkeypatch):
    from plugpull.errors import GuestError
    from plugpull.hunt.record import Failed
    kernel = Failed("kernel panic: Oops", {"kind": "panic", "line": "Oops", "excerpt": "Oops\ntrace"})
    run = fake_hunt(tmp_path, monkeypatch, [GuestError("QEMU died"), kernel, Failed("the workload exited 1"), kernel])
    lines = [json.loads(t) for t in (tmp_path / "h" / JOURNAL).read_text().splitlines()]
    assert [bool(line.get("infra")) for line in lines] == [True, False, True, False]
    assert [i for i, _ in run.infra] == [lines[0]["id"], lines[2]["id"]] and "QEMU died" in lines[0]["infra"]
    found = lines[1]
    assert found["failing"] and found["rules"] == {"kernel": 1} and found["verdicts"] == {"kernel-crash": 1}
    assert (tmp_path / "h" / found["artifact"] / "kernel.txt").read_text() == "Oops\ntrace"
    assert (tmp_path / "h" / found["artifact"] / "program.sh").is_file()
    assert [line["id"] for line in run.lines] == [lines[1]["id"], lines[3]["id"]]  # the judged ones
    assert not any((tmp_path / "h").glob(".work-*"))


def test_three_harness_failures_in_a_row_stop_the_hunt_and_keep_the_journal(tmp_path, monkeypatch):
    from plugpull.errors import GuestError, InfraError
    from plugpull.hunt.record import Failed
    kernel = Failed("kernel panic", {"kind": "panic", "line": "x", "excerpt": ""})
    outcomes = [kernel, kernel, GuestError("a"), GuestError("b"), GuestError("c")]
    with pytest.raises(InfraError, match="3 workloads in a row; the last: c"):
        fake_hunt(tmp_path, monkeypatch, outcomes, sample=6)
    assert len(Journal(tmp_path / "h", {}).done) == 2  # the first chunk's, kept


def test_a_spent_budget_starts_no_chunk_and_says_so(tmp_path, monkeypatch):
    run = fake_hunt(tmp_path, monkeypatch, [], budget_s=1e-12)
    assert run.stopped_by_budget and run.new == 0 and run.lines == []



def pipeline(tmp_path, monkeypatch, judge, log, chunks=3):
    """Run the chunk pipeline with a fake recording (a line per workload; each step noted in
    `log`) and `judge` as the judging: the ids in the journal."""
    from plugpull.hunt import hunter as hunter_mod

    def record(ids, spec, recorder, work, out, run, stop):
        log.append(("record", ids[0]))
        for _ in range(50):  # a chunk takes a while; it stops early when told to
            if stop.is_set():
                log.append(("stopped", ids[0]))
                return [], [], 0.0
            time.sleep(0.002)
        return [], [{"id": i, "states": 1} for i in ids], 0.0

    monkeypatch.setattr(hunter_mod, "record_chunk", record)
    monkeypatch.setattr(hunter_mod, "judge_chunk", lambda *a: judge() or [])
    ids = [f"w{i}" for i in range(2 * chunks)]
    try:
        guests = SimpleNamespace(recorder=SimpleNamespace(boots=0), checker=SimpleNamespace())
        hunter_mod.judge_chunks([ids[a:a + 2] for a in range(0, len(ids), 2)], hunter_mod.HuntSpec(1, chunk=2), guests,
                             tmp_path, tmp_path, hunter_mod.HuntRun({}, len(ids), []), Journal(tmp_path, {}).append)
    finally:
        assert not [t for t in threading.enumerate() if t.name.startswith("plugpull-recorder")]
    return [json.loads(t)["id"] for t in (tmp_path / JOURNAL).read_text().splitlines()]


def test_the_next_chunk_is_recorded_while_one_is_judged(tmp_path, monkeypatch):
    log = []

    def judge():
        judged = sum(e[0] == "judged" for e in log)
        deadline = time.monotonic() + 5
        while judged + 1 < 3 and sum(e[0] == "record" for e in log) < judged + 2 and time.monotonic() < deadline:
            time.sleep(0.001)  # the next chunk's recording has started, or it never will
        log.append(("judged", judged))

    assert pipeline(tmp_path, monkeypatch, judge, log) == [f"w{i}" for i in range(6)]  # in order, each once
    assert log.index(("record", "w2")) < log.index(("judged", 0)) < log.index(("judged", 1))
    assert log.index(("record", "w4")) < log.index(("judged", 1))


def test_an_interrupted_judging_stops_the_recording_ahead_and_journals_only_what_was_judged(tmp_path, monkeypatch):
    log = []

    def judge():
        if ("judged", 0) in log:
            raise KeyboardInterrupt
        log.append(("judged", 0))

    with pytest.raises(KeyboardInterrupt):
        pipeline(tmp_path, monkeypatch, judge, log)
    assert ("stopped", "w4") in log  # the chunk recorded ahead stopped early, and was waited for
    assert [json.loads(t)["id"] for t in (tmp_path / JOURNAL).read_text().splitlines()] == ["w0", "w1"]
