"""plugpull bisect on a toy git repo: git's own bisect in a private clone, with the build and
the test replaced by fakes at the engine's seam (build(commit), judge(kernel))."""

import json
import os

import pytest

from plugpull.bisect import FIXED, Journal, Untestable, run_bisect
from plugpull.cli import main
from plugpull.errors import InfraError
from tests.fake_bisect import Fakes, cli, plan_of, repo, snapshot  # noqa: F401 (fixtures)
from tests.unit.misc.test_fifo_inputs import deadline  # noqa: F401 (a fixture)


def test_finds_the_first_bad_commit(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[-1], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=6)
    result = run_bisect(plan, fakes.build, fakes.judge, say=lambda line: None)
    assert (result.first, result.subject) == (ids[5], "c6")
    assert len(result.steps) <= 4 and all(s.mark in ("good", "bad") for s in result.steps)
    assert "git bisect start" in (tmp_path / "out" / "git-bisect.log").read_text()


def test_fixed_finds_the_fixing_commit(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[-1], ids[0], tmp_path / "out", fixed=True)
    assert plan.terms is FIXED
    fakes = Fakes(plan.clone.path, broke=4, fixed=True)
    result = run_bisect(plan, fakes.build, fakes.judge, say=lambda line: None)
    assert (result.first, result.subject) == (ids[3], "c4")
    assert {s.mark for s in result.steps} <= {"broken", "fixed"}


def test_an_untestable_commit_is_skipped_and_said(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[-1], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=7, untestable={5})
    said = []
    result = run_bisect(plan, fakes.build, fakes.judge, say=said.append)
    assert result.first == ids[6]
    skipped = [s for s in result.steps if s.mark == "skip"]
    assert [s.subject for s in skipped] == ["c5"] and skipped[0].detail == "build failed at level 5"
    assert any(line.endswith("build failed at level 5 -> skip") for line in said)


def test_only_skipped_commits_left_names_the_candidates(repo, tmp_path):
    tree, ids = repo
    plan = plan_of(tree, ids[0], ids[3], tmp_path / "out")
    fakes = Fakes(plan.clone.path, broke=3, untestable={2, 3})
    result = run_bisect(plan, fakes.build, fakes.judge, say=lambda line: None)
    assert result.first is None and set(result.candidates) == {ids[1], ids[2], ids[3]}  # git names the bad one too


def test_a_harness_error_stops_with_no_mark_and_the_rerun_goes_on(repo, tmp_path):
    tree, ids = repo
    out = tmp_path / "out"
    plan = plan_of(tree, ids[0], ids[-1], out)
    first = Fakes(plan.clone.path, broke=6, harness_at=7)
    with pytest.raises(InfraError, match="missing"):
        run_bisect(plan, first.build, first.judge, say=lambda line: None)
    judged = Journal(out, plan.journal.settings).steps()
    assert 7 in first.built and "c7" not in [s.subject for s in judged] and judged
    again = Fakes(plan.clone.path, broke=6)
    said = []
    result = run_bisect(plan_of(tree, ids[0], ids[-1], out), again.build, again.judge, said.append)
    assert result.first == ids[5]
    assert not set(again.built) & {int(s.subject[1:]) for s in judged}  # judged steps not rebuilt
    assert said[0].startswith(f"resumed: both ends and {len(judged) - 2} step")  # the ends judged first


def test_the_command_names_the_commit_and_leaves_the_tree_as_it_was(cli, tmp_path, capsys):
    (tree, ids), test, made = cli
    before = snapshot(tree)
    argv = ["bisect", str(test), "--tree", str(tree), "--good", ids[0], "--bad", "main"]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[-2] == f'first bad commit: {ids[5]} "c6"'
    assert "step 1 of ~" in out.err
    result = json.loads((tmp_path / "results" / "bisect-repro" / "bisect.json").read_text())
    assert (result["first"], result["bad"], result["runs"]) == (ids[5], ids[-1], 3)
    assert snapshot(tree) == before
    assert main(argv) == 0
    assert made["fakes"].built == [] and "resumed" in capsys.readouterr().err


@pytest.mark.parametrize("change, says", [
    (lambda a, t, ids: a.__setitem__(3, str(t / "nowhere")), "not a directory"),
    (lambda a, t, ids: a.__setitem__(3, str(t)), "not a git work tree"),
    (lambda a, t, ids: ((t / "linux" / "fs").mkdir(), a.__setitem__(3, str(t / "linux" / "fs"))),
     "not the top of a git work tree"),
    (lambda a, t, ids: a.__setitem__(5, "v9.9"), "no such commit"),
    (lambda a, t, ids: (a.__setitem__(5, ids[-1]), a.__setitem__(7, ids[0])), "not an ancestor of --bad"),
    (lambda a, t, ids: a.__setitem__(1, str(t / "missing.sh")), "no such file"),
    (lambda a, t, ids: a.__setitem__(1, str(t / "linux" / "level")), "expected a reproducer script"),
    (lambda a, t, ids: a.append("--kernel=host"), "leave them out"),
])
def test_bad_input_exits_2_and_makes_nothing(cli, tmp_path, capsys, change, says):
    (tree, ids), test, _ = cli
    argv = ["bisect", str(test), "--tree", str(tree), "--good", ids[0], "--bad", ids[-1]]
    change(argv, tmp_path, ids)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(argv) == 2
    assert says in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no results/, no cache/


def test_an_out_dir_of_another_bisect_is_refused(cli, tmp_path, capsys):
    (tree, ids), test, _ = cli
    argv = ["bisect", str(test), "--tree", str(tree), "--good", ids[0], "--bad", ids[-1], "--out", "b"]
    assert main(argv) == 0
    before = snapshot(tmp_path / "b")
    assert main([*argv[:-2], "--runs", "1", "--out", "b"]) == 2
    assert "b holds a bisect of other settings (runs 3 there, 1 here)" in capsys.readouterr().err
    assert snapshot(tmp_path / "b") == before


@pytest.mark.parametrize("outcome, expect", [
    ("pass", "PASS 3/3"),
    ("fail", "FAIL at run 1 of 3: FAIL: the file is gone"),
    ("panic", "Untestable: the kernel under test failed in run 1: panicked"),
    ("hang", "Untestable: the guest died or hung in run 1: no answer"),
    ("harness", "InfraError"),
])
def test_the_script_judge_keeps_fail_kernel_failure_and_harness_apart(monkeypatch, outcome, expect):
    import plugpull.bisect.testers as testers
    import plugpull.reproducer.inguest as inguest
    from plugpull.errors import GuestTimeout

    def run_in_guest(rig, text):
        if outcome == "hang":
            raise GuestTimeout("no answer")
        if outcome == "harness":
            raise InfraError("the reproducer gave no verdict")
        return {"pass": inguest.Outcome(True, ("PASS",)), "fail": inguest.Outcome(False, ("FAIL: the file is gone",)),
                "panic": inguest.verdict_of(-1, "", "", "Kernel panic - not syncing: x\n")}[outcome]

    monkeypatch.setattr(testers, "booted", lambda spec, accel, backend: "rig")
    monkeypatch.setattr(inguest, "run_in_guest", run_in_guest)
    judge = testers.script_judge("echo PASS", 3, None, None)
    try:
        said = judge("build:bisect-x").detail
    except (Untestable, InfraError) as e:
        said = f"{type(e).__name__}: {e}" if isinstance(e, Untestable) else type(e).__name__
    assert said.startswith(expect.split(": panicked")[0])


def test_a_failed_build_is_untestable_and_a_missing_tool_is_not(monkeypatch, tmp_path):
    import plugpull.bisect.testers as testers
    from plugpull.errors import ToolMissing
    from plugpull.kernels.build.make import BuildFailed

    for error, kind in ((BuildFailed("make bzImage failed"), Untestable), (ToolMissing("make"), ToolMissing)):
        def build_kernel(request, error=error):
            assert request.name == "bisect-0123456789ab" and request.patches == []
            raise error
        monkeypatch.setattr(testers, "build_kernel", build_kernel)
        with pytest.raises(kind):
            testers.builder(tmp_path)("0123456789abcdef" * 2 + "01234567")


def test_a_bisects_clone_is_built_with_its_objects_beside_it(tmp_path, monkeypatch):
    import plugpull.bisect.testers as testers
    asked = []

    def build_kernel(request):
        asked.append(request.beside)
        raise testers.BuildFailed("stop here")
    monkeypatch.setattr(testers, "build_kernel", build_kernel)
    with pytest.raises(Untestable):
        testers.builder(tmp_path / "src")("0123456789abcdef" * 2 + "01234567")
    assert asked == [True]


def test_a_fifo_in_a_bisects_directory_is_said_never_waited_on(tmp_path, deadline):  # noqa: F811
    """A FIFO where a bisect keeps its settings or its steps: one line naming it, no hang."""
    from plugpull.bisect.journal import SETTINGS, STEPS, check_out
    from plugpull.errors import UsageError
    out = tmp_path / "b"
    out.mkdir()
    os.mkfifo(out / SETTINGS)
    with pytest.raises(UsageError, match=f"{out / SETTINGS}: a FIFO"):
        check_out(out, {"good": "a"})
    (out / SETTINGS).unlink()
    os.mkfifo(out / STEPS)
    with pytest.raises(UsageError, match=f"{out / STEPS}: a FIFO, not a regular file"):
        Journal(out, {"good": "a"}).steps()
