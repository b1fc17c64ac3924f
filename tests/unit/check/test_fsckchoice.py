"""`hunt --fsck always|failing|every:N`: the choice as typed, as the hunt keeps it, which
states the host's fsck reads (on the fake backend, no VM), and that a state fsck did not
read is never shown as fsck clean."""

import json

import pytest
from tests.unit.guest import test_backend
from tests.fake_backend import FakeBackend
from tests.unit.guest.test_backend import IMAGE, ROUNDS, WL, XFS
from tests.unit.check.test_hostfsck import ExportingBackend, host_fsck_of_the_fake, second_state_corrupt  # noqa: F401
from tests.unit.check.test_hot_checker import EXPECTED, verdicts

from plugpull import cli
from plugpull.check import hostfsck
from plugpull.check.checker import Checker, Plug, observation_from, parse_report
from plugpull.check.fsckchoice import CheckTiming, FsckChoice, fsck_choice, picked
from plugpull.check.verdict import Observation, Verdict, classify
from plugpull.crash.judge import Batch, judge_many
from plugpull.errors import UsageError
from plugpull.guest.contract.config import Accel
from plugpull.guest.rig import Rig
from plugpull.hunt.journal import SETTINGS, check_out
from plugpull.hunt.hunter import HuntSpec
from plugpull.hunt.summary import summary
from plugpull.report.states import saved_state
from plugpull.testbed.fs import filesystem


@pytest.fixture
def rec(tmp_path):
    return test_backend.rec.__wrapped__(tmp_path)


@pytest.mark.parametrize("text, kind, every", [("always", "always", 1), ("failing", "failing", 1),
                                               ("every:4", "every", 4), ("every:1", "every", 1)])
def test_the_three_choices_are_read(text, kind, every):
    choice = fsck_choice(text)
    assert (choice.kind, choice.every, choice.text) == (kind, every, text)


@pytest.mark.parametrize("text", ["every:0", "every:x", "sometimes", "every:", "every:-2", "every:²",
                                  "every:1_000", "failing:2", "always:1", "every"])
def test_a_bad_choice_is_refused(text):
    with pytest.raises(ValueError):
        fsck_choice(text)


@pytest.mark.parametrize("text", ["every:0", "every:x", "sometimes"])
def test_hunt_refuses_a_bad_fsck_in_one_line_before_anything_is_made(text, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        cli.main(["hunt", "--seq", "1", "--fsck", text])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--fsck" in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_the_choice_is_in_the_settings_only_when_it_is_not_always():
    assert "fsck" not in HuntSpec(1).settings("6.1.0-x")
    assert "fsck" not in HuntSpec(1, fsck=fsck_choice("always")).settings("6.1.0-x")
    assert HuntSpec(1, fsck=fsck_choice("every:4")).settings("6.1.0-x")["fsck"] == "every:4"


def test_a_hunt_goes_on_only_with_the_fsck_it_began_with(tmp_path):
    before = HuntSpec(1).settings("6.1.0-x")  # as a hunt from before --fsck kept them
    out = tmp_path / "h"
    out.mkdir()
    (out / SETTINGS).write_text(json.dumps(before))
    check_out(out, HuntSpec(1, fsck=fsck_choice("always")).settings("6.1.0-x"))
    with pytest.raises(UsageError, match="fsck"):
        check_out(out, HuntSpec(1, fsck=fsck_choice("failing")).settings("6.1.0-x"))
    (out / SETTINGS).write_text(json.dumps(HuntSpec(1, fsck=fsck_choice("every:4")).settings("6.1.0-x")))
    check_out(out, HuntSpec(1, fsck=fsck_choice("every:4")).settings("6.1.0-x"))
    for other in ("every:5", "always"):
        with pytest.raises(UsageError, match="fsck"):
            check_out(out, HuntSpec(1, fsck=fsck_choice(other)).settings("6.1.0-x"))


def test_a_state_not_clean_is_always_fsckd_and_every_n_picks_about_one_in_n_the_same_each_time():
    keys = [i.to_bytes(4, "big") for i in range(4000)]
    for choice in ("always", "failing", "every:4"):
        assert all(fsck_choice(choice).wants(k, clean=False) for k in keys)
    assert all(fsck_choice("always").wants(k, clean=True) for k in keys)
    assert not any(fsck_choice("failing").wants(k, clean=True) for k in keys)
    every4 = [k for k in keys if fsck_choice("every:4").wants(k, clean=True)]
    assert 800 < len(every4) < 1200
    assert every4 == [k for k in keys if picked(k, 4)]
    assert all(fsck_choice("every:1").wants(k, clean=True) for k in keys)


def judged_with(rec, backend, tmp_path, choice: str, timing=None):
    checker = Checker(Rig(IMAGE, Accel.TCG, backend), XFS, plug=Plug.HOT, per_command=8)
    checker.timing = timing
    [judged] = judge_many([Batch(rec, ROUNDS, WL, 1, tmp_path / "states")], checker, fsck=fsck_choice(choice))
    return judged


def test_failing_fscks_only_what_the_mount_or_oracle_found_bad_and_misses_damage_under_a_right_tree(
        rec, tmp_path, host_fsck_of_the_fake):
    every = judged_with(rec, ExportingBackend(second_state_corrupt), tmp_path / "always", "always")
    assert verdicts(every) == [Verdict.CLEAN, Verdict.FS_CORRUPT] + EXPECTED[2:]
    backend = ExportingBackend(second_state_corrupt)
    failing = judged_with(rec, backend, tmp_path / "failing", "failing")
    assert verdicts(failing) == EXPECTED, "the damage fsck alone sees is missed: what docs/hunt.md says"
    [guest] = backend.guests
    assert len(guest.exports.added) == 2
    assert [j.observation.fsck_rc is None for j in failing] == [True, True, False, False]
    assert all("fsck not run" in j.verdict.reason for j in failing[:2])
    assert all(j.observation.fsck_rc is not None for j in every)


def test_every_1_reads_every_state_and_the_timing_counts_them(rec, tmp_path, host_fsck_of_the_fake):
    timing = CheckTiming()
    judged = judged_with(rec, ExportingBackend(second_state_corrupt), tmp_path, "every:1", timing)
    assert verdicts(judged) == [Verdict.CLEAN, Verdict.FS_CORRUPT] + EXPECTED[2:]
    assert timing.many_states == timing.fsck_states == 4 and 0 <= timing.fsck_s <= timing.many_s


def test_the_guests_own_fsck_is_run_whatever_the_choice(rec, tmp_path):
    judged = judged_with(rec, FakeBackend([], second_state_corrupt), tmp_path, "failing")
    assert verdicts(judged) == [Verdict.CLEAN, Verdict.FS_CORRUPT] + EXPECTED[2:]


def test_fsck_not_run_is_never_read_as_fsck_clean():
    keys, sections = parse_report(hostfsck.not_run({"keys": b"mount_rc=0\numount_rc=0", "fsck": b""})["keys"].decode())
    obs = observation_from(keys, sections, {})
    assert obs.fsck_rc is None, "the marker must not read as an exit status"
    for fs in (XFS, filesystem("ext4"), filesystem("btrfs")):
        v = classify(fs, obs, WL, [])
        assert v.verdict is Verdict.CLEAN and v.reason.endswith("; fsck not run")
    ran = classify(XFS, Observation(0, 0, 0, {}), WL, [])
    assert "fsck" not in ran.reason


def state_page(tmp_path, fsck_rc) -> str:
    from types import SimpleNamespace
    from plugpull.report.html import templates
    state = tmp_path / f"s{fsck_rc}"
    state.mkdir()
    (state / "state.json").write_text(json.dumps({"verdict": "data-loss", "fsck_rc": fsck_rc,
                                                  "evidence": {"fsck": "all good"}}))
    page = templates().from_string('{% macro block(title, text) %}<h4>{{ title }}</h4>{{ text }}{% endmacro %}'
                                   '{% include "state.html.j2" %}')
    return page.render(state=SimpleNamespace(saved=saved_state(state), anchor="a", cut=1, same=[], acks="0",
                                             json="state.json", command_dir="x"))


def test_a_saved_state_without_fsck_shows_not_run_on_its_page(tmp_path):
    not_run, ran = state_page(tmp_path, None), state_page(tmp_path, 0)
    assert "fsck: not run" in not_run and "fsck (rc" not in not_run
    assert "fsck (rc 0)" in ran and "not run" not in ran


def test_the_summary_says_how_many_states_fsck_read():
    settings = {**HuntSpec(1, fsck=fsck_choice("every:4")).settings("6.1.0-x")}
    lines = [{"id": "seq1-000001", "ops": "creat A/foo, fsync A", "states": 3, "distinct": 3, "verdicts": {"clean": 3},
              "rules": {}, "failing": False, "fscked": 1}]
    assert "fsck (every:4): read 1 of 3 distinct states" in summary(settings, lines, 1)
    assert "fsck (" not in summary(HuntSpec(1).settings("6.1.0-x"), [{**lines[0], "fscked": 0}], 1)
