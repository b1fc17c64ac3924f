"""A bisect's two ends built and tested before any step: BAD first, then GOOD; an end that is
not as said stops the bisect before git bisects, in one line and exit 2."""

import json

import pytest

from plugpull.bisect import EndRefused, Journal, run_bisect
from plugpull.bisect.engine import Pace
from plugpull.cli import main
from plugpull.errors import InfraError, UsageError
from tests.fake_bisect import Fakes, cli, plan_of, repo, snapshot  # noqa: F401 (fixtures)


def quiet(line: str) -> None:
    pass


def test_the_ends_are_tested_bad_first_then_the_steps(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[-1], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=6)
    result = run_bisect(plan, fakes.build, fakes.judge, say=quiet)
    assert fakes.built[:2] == [9, 1] and result.first == ids[5]
    assert [(s.commit, s.mark) for s in result.ends] == [(ids[-1], "bad"), (ids[0], "good")]
    assert not {s.commit for s in result.steps} & {ids[0], ids[-1]}
    assert [e["mark"] for e in result.to_json()["ends"]] == ["bad", "good"]


@pytest.mark.parametrize("broke, built, says", [
    (10, [9], "--bad"),        # the test never fails: GOOD is not even built
    (1, [9, 1], "--good"),     # it fails everywhere
])
def test_an_end_not_as_said_stops_before_any_step(repo, tmp_path, broke, built, says):
    tree, ids = repo
    out = tmp_path / "out"
    plan = plan_of(tree, ids[0], ids[-1], out)
    fakes = Fakes(plan.clone.path, broke=broke)
    with pytest.raises(EndRefused, match=says) as refused:
        run_bisect(plan, fakes.build, fakes.judge, say=quiet)
    assert isinstance(refused.value, UsageError) and "\n" not in str(refused.value)
    assert fakes.built == built and not (out / "git-bisect.log").exists()
    assert [s.commit for s in Journal(out, plan.journal.settings).steps()] == ([ids[-1]] if says == "--good" else [])


def test_the_refusal_says_what_the_test_said(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[-1], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=10)
    with pytest.raises(EndRefused) as refused:
        run_bisect(plan, fakes.build, fakes.judge, say=quiet)
    assert f"--bad {ids[-1][:12]}" in str(refused.value) and "PASS 3/3" in str(refused.value)
    assert "must FAIL" in str(refused.value)


@pytest.mark.parametrize("broke, built, says", [
    (1, [1], "--bad"),         # with --fixed BAD is the older end: it passes, nothing to find
    (10, [1, 9], "--good"),    # never fixed: the newer GOOD fails
])
def test_with_fixed_the_roles_are_swapped(repo, tmp_path, broke, built, says):
    tree, ids = repo
    plan = plan_of(tree, ids[-1], ids[0], tmp_path / "out", fixed=True)
    fakes = Fakes(plan.clone.path, broke=broke, fixed=True)
    with pytest.raises(EndRefused, match=says):
        run_bisect(plan, fakes.build, fakes.judge, say=quiet)
    assert fakes.built == built


def test_with_fixed_ends_that_hold_are_marked_in_its_terms(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[-1], ids[0], tmp_path / "out", fixed=True)
    fakes = Fakes(plan.clone.path, broke=4, fixed=True)
    result = run_bisect(plan, fakes.build, fakes.judge, say=quiet)
    assert fakes.built[:2] == [1, 9] and result.first == ids[3]
    assert [s.mark for s in result.ends] == ["broken", "fixed"]


def test_an_end_that_cannot_be_tested_is_said_and_stops(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[-1], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=6, untestable={1})
    with pytest.raises(EndRefused, match="--good .* cannot be tested: build failed at level 1"):
        run_bisect(plan, fakes.build, fakes.judge, say=quiet)


def test_a_resumed_bisect_does_not_test_its_ends_again(repo, tmp_path):
    tree, ids = repo
    out = tmp_path / "out"
    first = Fakes(plan_of(tree, ids[0], ids[-1], out).clone.path, broke=6, harness_at=5)
    with pytest.raises(InfraError):
        run_bisect(plan_of(tree, ids[0], ids[-1], out), first.build, first.judge, say=quiet)
    assert first.built[:2] == [9, 1]
    again = Fakes(first.clone, broke=6)
    said = []
    result = run_bisect(plan_of(tree, ids[0], ids[-1], out), again.build, again.judge, said.append)
    assert result.first == ids[5] and 9 not in again.built and 1 not in again.built
    assert [s.commit for s in result.ends] == [ids[-1], ids[0]]
    assert said[0].startswith("resumed: both ends")


def test_trusted_ends_are_not_built(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[-1], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=6)
    result = run_bisect(plan, fakes.build, fakes.judge, say=quiet, test_ends=False)
    assert result.first == ids[5] and not {1, 9} & set(fakes.built) and result.ends == ()


@pytest.mark.parametrize("test_ends", [True, False])
def test_each_step_says_how_long_is_left_once_a_commit_was_tested(repo, tmp_path, test_ends):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[-1], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=6)
    said = []
    run_bisect(plan, fakes.build, fakes.judge, say=said.append, test_ends=test_ends)
    steps = [line for line in said if line.startswith("step ") and "building..." in line]
    timed = steps if test_ends else steps[1:]  # the ends give the first step its pace
    assert len(steps) >= 2 and all(line.endswith(" left)") for line in timed)
    assert test_ends or steps[0].endswith("building...")


@pytest.mark.parametrize("took, commits, says", [
    ([], 3, ""),
    ([20.0], 2, " (under a minute left)"),
    ([600.0, 1200.0], 3, " (about 45 min left)"),
    ([3000.0], 3, " (about 2 h 30 min left)"),
])
def test_the_pace_estimates_from_the_mean_so_far(took, commits, says):
    pace = Pace()
    pace.took = list(took)
    assert pace.left(commits) == says


def test_the_command_refuses_an_end_in_one_line_and_exits_2(cli, tmp_path, capsys):
    (tree, ids), test, made = cli
    made["broke"] = 10
    argv = ["bisect", str(test), "--tree", str(tree), "--good", ids[0], "--bad", ids[-1], "--out", "b"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"plugpull: --bad {ids[-1][:12]}") and "PASS" in err[-1]
    assert not (tmp_path / "b" / "bisect.json").exists()


def test_the_command_with_trusted_ends_goes_on_and_records_them(cli, tmp_path, capsys):
    (tree, ids), test, made = cli
    argv = ["bisect", str(test), "--tree", str(tree), "--good", ids[0], "--bad", ids[-1], "--out", "b"]
    assert main([*argv, "--trust-ends"]) == 0
    assert json.loads((tmp_path / "b" / "bisect.json").read_text())["ends"] == []
    assert 1 not in made["fakes"].built and "ends: taken as said" in capsys.readouterr().out


def test_without_git_the_command_refuses_before_anything(cli, tmp_path, capsys, monkeypatch):
    (tree, ids), test, _ = cli
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    before = snapshot(tmp_path)
    assert main(["bisect", str(test), "--tree", str(tree), "--good", ids[0], "--bad", ids[-1]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "git is missing" in err and "Debian package git" in err
    assert snapshot(tmp_path) == before
