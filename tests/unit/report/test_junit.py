"""`plugpull reproduce --junit`: the XML from fixture results (passed, failure, error,
skipped), parsed back with xml.etree; a case whose [expect] does not hold is a <failure> that
names the verdicts and the saved states; the file is checked before anything runs."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.case_files import write_case
from plugpull import cli
from plugpull.errors import InfraError
from plugpull.report.junit import JUnitSuite, JUnitCase, junit_xml, write_junit
from plugpull.report.junitcases import case_suite, fault_test, replay_tests
from plugpull.results import CellResult, CrashSummary, Env, FaultResult
from plugpull.runs.cases import load_case
from plugpull.runs.matrix import for_kernel

CASE = """title = "t"
source = "s"
[matrix]
fs = ["xfs"]
modes = ["barrier", "nobarrier", "nocache"]
workloads = ["fsync-files"]
kernels = ["host", "debian:6.12", "debian:7.3"]
[expect]
safe = ["barrier"]
unsafe = ["nobarrier"]
"""
ARTIFACTS = "results/case-artifacts/xfs-barrier-fsync-files-abc"


def summary(clean: int, data_loss: int = 0, artifacts: str | None = None) -> CrashSummary:
    return CrashSummary(states=clean + data_loss, models=("reorder",), clean=clean, data_loss=data_loss,
                        inconsistent=0, fs_corrupt=0, unmountable=0, kernel_crash=0, infra_error=0,
                        artifacts=artifacts, distinct=clean + data_loss)


def result(cell, crash: CrashSummary | None = None, error: str | None = None) -> CellResult:
    return CellResult(key=cell.key(), fs=cell.fs, mode=cell.mode, workload=cell.workload,
                      env=Env(kernel="6.1.0-56-amd64"), seconds=2.5, crash=crash, error=error)


def write_results(path: Path, results: list) -> Path:
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in results))
    return path


@pytest.fixture
def case(tmp_path):
    return load_case(write_case(tmp_path, CASE))


def cases_of(root: ET.Element) -> dict:
    return {tc.get("name"): tc for tc in root.iter("testcase")}


def test_each_outcome_parses_back_with_its_counts():
    """2 failures, 3 errors, 1 skipped of 7: counts that differ, so that swapped attributes fail."""
    tests = (JUnitCase("c", "barrier [host]", out="20 states: 20 clean", seconds=1.5),
             JUnitCase("c", "nobarrier [host]", "failure", "nobarrier: expected states that are not clean, saw none",
                  "details"),
             JUnitCase("c", "nobarrier [debian:6.12]", "failure", "nobarrier: expected states that are not clean"),
             JUnitCase("c", "nocache [host]", "error", "harness failure: QEMU died\nconsole tail"),
             *(JUnitCase("c", f"nocache [debian:{v}]", "error", "harness failure") for v in ("6.12", "7.3")),
             JUnitCase("c", "barrier [debian:7.3]", "skipped", "not run"))
    root = ET.fromstring(junit_xml([JUnitSuite("c", tests, (("title", "t"),))]))
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    for element in (root, suite):
        assert [element.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["7", "2", "3", "1"]
    assert suite.find("properties/property").attrib == {"name": "title", "value": "t"}
    by_name = cases_of(root)
    assert list(by_name["barrier [host]"]) == [by_name["barrier [host]"].find("system-out")]
    assert by_name["barrier [host]"].get("time") == "1.500"
    assert by_name["nobarrier [host]"].find("failure").get("type") == "expectation"
    error = by_name["nocache [host]"].find("error")
    assert error.get("message") == "harness failure: QEMU died" and "console tail" in error.text
    assert by_name["barrier [debian:7.3]"].find("skipped").get("message") == "not run"


def test_a_consoles_control_characters_never_break_the_xml():
    text = junit_xml([JUnitSuite("c", (JUnitCase("c", "m", "error", "bad \x1b[31mred\x00", "\x07tail\ufffe"),))])
    error = ET.fromstring(text).find("testsuite/testcase/error")
    assert error.get("message") == "bad [31mred" and error.text == "tail"


def test_an_unknown_outcome_is_refused():
    with pytest.raises(ValueError):
        JUnitCase("c", "m", "flaky")


def test_a_case_on_three_kernels_passes_fails_errs_and_skips(case, tmp_path):
    host, on_612 = for_kernel(list(case.cells), ""), for_kernel(list(case.cells), "6.12.117+deb13-amd64")
    cells = {(c.mode, c.kernel): c for c in host + on_612}
    results = write_results(tmp_path / "case.jsonl", [
        result(cells["barrier", ""], summary(17, 3, ARTIFACTS)),  # safe, not borne out
        result(cells["nobarrier", ""], summary(0, 20, "results/x")),  # unsafe, borne out
        result(cells["nocache", ""], error="harness failure (not a verdict): QEMU died"),
        result(cells["barrier", "6.12.117+deb13-amd64"], summary(20)),
    ])
    kernels = [("host", ""), ("debian:6.12", "6.12.117+deb13-amd64"), ("debian:7.3", "7.3.4+deb13-amd64")]
    suite = case_suite(case, kernels, {"host": []}, "the guest never came up", results)
    outcome = {t.name: t.outcome for t in suite.tests}
    assert outcome == {"barrier [host]": "failure", "nobarrier [host]": "passed", "nocache [host]": "error",
                       "barrier [debian:6.12]": "passed", "nobarrier [debian:6.12]": "error",
                       "nocache [debian:6.12]": "error", "barrier [debian:7.3]": "skipped",
                       "nobarrier [debian:7.3]": "skipped", "nocache [debian:7.3]": "skipped"}
    root = ET.fromstring(junit_xml([suite]))
    failure = cases_of(root)["barrier [host]"].find("failure")
    assert failure.get("message") == "barrier: expected only clean states, saw 3 that are not"
    assert "20 states (20 distinct): 17 clean, 3 data-loss" in failure.text
    assert f"artifacts: {ARTIFACTS}" in failure.text and f"results: {results}" in failure.text
    assert "the guest never came up" in cases_of(root)["nobarrier [debian:6.12]"].find("error").get("message")
    assert "on debian:6.12" in cases_of(root)["nocache [debian:7.3]"].find("skipped").get("message")
    assert "QEMU died" in cases_of(root)["nocache [host]"].find("error").get("message")


def test_a_harness_failure_after_every_kernel_ran_is_an_error_of_its_own(case, tmp_path):
    cells = for_kernel(list(case.cells), "")
    results = write_results(tmp_path / "case.jsonl", [result(c, summary(10, 10)) for c in cells])
    suite = case_suite(case, [("host", "")], {"host": []}, "no space left on results/", results)
    assert [(t.name, t.outcome) for t in suite.tests] == [
        ("barrier [host]", "failure"), ("nobarrier [host]", "passed"), ("nocache [host]", "passed"),
        ("after the run", "error")]
    assert "no space left" in suite.tests[-1].message


def test_no_crash_skips_the_modes_whose_expectation_is_about_crash_states(case, tmp_path):
    host = {c.mode: c for c in for_kernel(list(case.cells), "")}
    results = write_results(tmp_path / "case.jsonl", [result(c) for c in host.values()])
    suite = case_suite(case, [("host", "")], {"host": []}, None, results, no_crash=True)
    assert {t.name: t.outcome for t in suite.tests} == {
        "barrier [host]": "skipped", "nobarrier [host]": "skipped", "nocache [host]": "passed"}


def test_fault_runs_are_one_testcase_per_kernel():
    def run(verdict):
        return FaultResult(key=f"k-{verdict}", fs="ext4", fault="error-writes", workload="fsync-retry", verdict=verdict,
                           reason=f"it was {verdict}")

    class Plan:
        expect = ()

    class FaultCase:
        faults = Plan()

    test = JUnitCase("c", "faults [host]")
    assert fault_test(test, FaultCase, [run("error-reported")], Path("r.jsonl"), None).outcome == "passed"
    broken = fault_test(test, FaultCase, [run("error-reported"), run("infra-error")], Path("r.jsonl"), None)
    assert broken.outcome == "error" and "it was infra-error" in broken.message
    assert "1 error-reported, 1 infra-error" in broken.out
    assert fault_test(test, FaultCase, None, Path("r.jsonl"), ("skipped", "not run")).outcome == "skipped"


def test_a_replayed_state_that_differs_is_a_failure(tmp_path):
    from types import SimpleNamespace

    from plugpull.runs.cases import Case

    kept = SimpleNamespace(mode="barrier", record=tmp_path / "rec", describe=lambda: "xfs barrier bonnie, reorder cut 157")
    case = Case(tmp_path / "finding.toml", "t", "s", "", (), verdicts=(("barrier", "unmountable"),), replay=kept)
    same = {"verdict": "unmountable", "reason": "recovery mount failed", "digest": "d1", "digest_expected": "d1"}
    tests = replay_tests(case, ["host", "debian:7.3", "debian:6.12"],
                         {"host": same, "debian:7.3": {**same, "verdict": "clean", "digest": "d2"}}, "QEMU died")
    assert [t.outcome for t in tests] == ["passed", "failure", "error"]
    assert tests[1].message == "barrier: expected unmountable, it is clean; the rebuilt state differs from the kept one"
    assert "artifact: " in tests[1].detail and "rec" in tests[1].detail
    assert "1 state: unmountable" in tests[0].out


def test_the_file_is_written_whole_and_its_directory_made(tmp_path):
    path = tmp_path / "ci" / "junit.xml"
    write_junit(path, [JUnitSuite("c", (JUnitCase("c", "m"),))])
    assert ET.parse(path).getroot().get("tests") == "1"
    assert [p.name for p in path.parent.iterdir()] == ["junit.xml"]


@pytest.fixture
def fake_runs(monkeypatch):
    """`reproduce` with no guest: each cell 'runs' by writing the CellResult `outcome` makes of it."""
    import plugpull.cli.reproduce as reproduce_cli
    import plugpull.runs.matrix as runs_matrix
    from plugpull.results import append_line

    ran = []

    def run_matrix(todo, results, rig, work, judging=None):
        out = [fake_runs.outcome(c) for c in todo]
        for r in out:
            append_line(results, r.to_json())
        ran.extend(todo)
        return out

    fake_runs.outcome = lambda c: result(c, summary(20))
    monkeypatch.setattr(runs_matrix, "prepare_rig", lambda *a: None)
    monkeypatch.setattr(reproduce_cli, "finish_matrix", lambda *a: None)
    monkeypatch.setattr("plugpull.runs.caserun.run_matrix", run_matrix)
    fake_runs.ran = ran
    return fake_runs


def two_cases(tmp_path) -> list[str]:
    paths = []
    for name, expect in (("one", 'safe = ["barrier"]'), ("two", 'unsafe = ["nobarrier"]')):
        path = tmp_path / f"{name}.toml"
        path.write_text(CASE.split("kernels")[0].replace('"nocache"', "").replace(", ]", "]")
                        + f"[expect]\n{expect}\n")
        paths.append(str(path))
    return paths


def test_reproduce_writes_one_testcase_per_case_and_mode_and_exits_1_on_a_failure(tmp_path, fake_runs, monkeypatch):
    monkeypatch.chdir(tmp_path)
    junit = tmp_path / "out" / "junit.xml"
    assert cli.main(["reproduce", *two_cases(tmp_path), "--junit", str(junit)]) == 1  # two: nobarrier all clean
    root = ET.parse(junit).getroot()
    assert [s.get("name") for s in root.iter("testsuite")] == ["one", "two"]
    assert [(tc.get("classname"), tc.get("name"), [e.tag for e in tc]) for tc in root.iter("testcase")] == [
        ("one", "barrier [host]", ["system-out"]), ("one", "nobarrier [host]", ["system-out"]),
        ("two", "barrier [host]", ["system-out"]), ("two", "nobarrier [host]", ["failure", "system-out"])]
    assert (tmp_path / "results" / "one.jsonl").is_file() and (tmp_path / "results" / "two.jsonl").is_file()


def test_a_harness_failure_is_an_error_and_the_next_case_still_runs(tmp_path, fake_runs, monkeypatch):
    import plugpull.runs.matrix as runs_matrix

    monkeypatch.chdir(tmp_path)
    first, second = two_cases(tmp_path)
    boots = []

    def prepare_rig(*a):
        boots.append(a)
        if len(boots) == 1:
            raise InfraError("QEMU died before the guest was ready")

    monkeypatch.setattr(runs_matrix, "prepare_rig", prepare_rig)
    fake_runs.outcome = lambda c: result(c, summary(10, 10))
    assert cli.main(["reproduce", first, second, "--junit", "j.xml"]) == 3
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert [root.get(k) for k in ("tests", "failures", "errors")] == ["4", "0", "2"]
    errors = [tc.find("error") for tc in root.iter("testcase") if tc.find("error") is not None]
    assert len(errors) == 2 and all("QEMU died" in e.get("message") for e in errors)
    assert [c.mode for c in fake_runs.ran] == ["barrier", "nobarrier"]  # the second case ran


@pytest.mark.parametrize("junit", ["{tmp}", "{tmp}/one.toml/j.xml", "/dev/null", ""])
def test_a_bad_junit_path_is_exit_2_before_anything_runs(tmp_path, fake_runs, junit, capsys):
    path = junit.format(tmp=tmp_path)
    rc, _, err = run_cli(["reproduce", *two_cases(tmp_path), "--junit", path], capsys)  # or by the option's type
    assert rc == 2
    assert "--junit" in err
    assert fake_runs.ran == []


def test_several_cases_take_no_results_file(tmp_path, fake_runs):
    assert cli.main(["reproduce", *two_cases(tmp_path), "--results", str(tmp_path / "r.jsonl")]) == 2
    assert fake_runs.ran == []
