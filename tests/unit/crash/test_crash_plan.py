"""The engine's pure parts and the CLI's handling of bad input: no VM."""

import pytest

from tests.cli_run import run_cli
from plugpull.crash.record import Trigger
from plugpull.crash.spec import CrashSpec
from plugpull.errors import UsageError
from plugpull.powerloss.cuts import state_cuts
from plugpull.powerloss.writelog import LogEntry


@pytest.mark.parametrize("text, kind, value", [
    ("acks:30", "acks", 30), ("writes:500", "writes", 500), ("time:2.5", "time", 2.5), ("end", "end", 0)])
def test_trigger_parse(text, kind, value):
    t = Trigger.parse(text)
    assert (t.kind, t.value) == (kind, value) and Trigger.parse(str(t)) == t


@pytest.mark.parametrize("text", ["acks", "acks:0", "acks:x", "writes:-1", "soon", "end:3", ""])
def test_bad_trigger(text):
    with pytest.raises(UsageError):
        Trigger.parse(text)


def entries(n):
    return [LogEntry(i, i * 8, 8, 0, 512 * (2 + 9 * i), 0) for i in range(n)]


def test_state_cuts_are_distinct_seeded_and_include_the_kill_point():
    cuts = state_cuts(entries(100), 30, seed=1)
    assert len(cuts) == 30 == len(set(cuts)) and cuts[-1] == 100
    assert cuts == state_cuts(entries(100), 30, seed=1)
    assert cuts != state_cuts(entries(100), 30, seed=2)


def test_state_cuts_of_a_short_log_take_every_cut():
    assert state_cuts(entries(5), 30, seed=1) == [0, 1, 2, 3, 4, 5]
    assert state_cuts([], 3, seed=1) == [0]


def judged_models(mode: str, models: tuple) -> list[str]:
    return [str(m) for m in CrashSpec(mode=mode, models=models).resolve().models]


def test_lying_mode_judges_with_lying_models():
    assert judged_models("lying", ("reorder",)) == ["reorder+lying"]
    assert judged_models("lying", ("reorder+lying",)) == ["reorder+lying"]
    assert judged_models("barrier", ("reorder",)) == ["reorder"]
    assert CrashSpec(mode="lying").resolve().recording_mode.name == "barrier"


@pytest.mark.parametrize("changes, message", [
    ({"fs": "zfs"}, "unknown filesystem"), ({"mode": "fast"}, "unknown mode"),
    ({"models": ("bogus",)}, "unknown power-loss model"), ({"trigger": "x"}, "bad trigger"),
    ({"states": 0}, "states"), ({"workload": "nope"}, "unknown workload"), ({"cuts": "often"}, "--cuts"),
])
def test_bad_crash_specs(changes, message):
    with pytest.raises(UsageError, match=message):
        CrashSpec(**changes).validate()


@pytest.mark.parametrize("argv", [
    ["crash", "--model", "bogus"], ["crash", "--trigger", "soon"], ["crash", "--states", "0"],
    ["replay", "/nonexistent/state"], ["crash", "--fs", "zfs"], ["shell", "--kernel", "/nonexistent"],
    ["reproduce", "/nonexistent/case.toml"], ["matrix", "--mode", "fast"], ["matrix", "--disk-profile", "floppy"],
    ["matrix", "--param", "files=3"], ["report", "/nonexistent/results.jsonl"], ["reproduce", "x.toml", "--scale", "2"],
])
def test_cli_bad_input_exits_2(argv, capsys):
    rc, _, err = run_cli(argv, capsys)
    assert rc == 2
    assert err.strip()


def test_pair_cuts_are_sampled_pairs_with_the_last():
    from plugpull.powerloss.cuts import pair_cuts
    pairs = [[i, i + 3] for i in range(40)]
    cuts = pair_cuts(pairs, 10, seed=1)
    assert len(cuts) == 10 and (39, 42) in cuts and all((a, b) in map(tuple, pairs) for a, b in cuts)
    assert cuts == pair_cuts(pairs, 10, seed=1) != pair_cuts(pairs, 10, seed=2)


def test_two_disk_ack_is_owed_only_when_both_logs_reached_it():
    from plugpull.check.verdict import Ack, required_acks
    acks = [Ack(1, 0, 5, 10), Ack(2, 0, 8, 20)]
    assert required_acks(acks, 8, 15) == [1]
    assert required_acks(acks, 8, 20) == [1, 2]
    assert required_acks(acks, 4, 99) == []
