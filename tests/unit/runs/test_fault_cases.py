"""A case file's [faults] table: validated field by field, turned into fault runs, and its
[[expect.faults]] checked against the verdicts."""

import pytest

from tests.case_files import write_case
from plugpull.paths import ROOT
from plugpull.results import FaultResult
from plugpull.runs.cases import CaseError, load_case
from plugpull.runs.faultcase import fault_expectation_failures

FAULTS = """
title = "t"
[faults]
fs = ["ext4", "xfs"]
kinds = ["error-writes", "corrupt-writes,seed=3", "flaky:2:1"]
trigger = "acks:1"
window = 3
[workload.fsync-retry]
wait = 20
[[expect.faults]]
fs = "ext4"
kind = "error-writes"
verdicts = ["silent-loss", "error-reported"]
"""


def test_a_faults_case_runs_every_kind_on_every_fs_with_the_trigger_and_window(tmp_path):
    case = load_case(write_case(tmp_path, FAULTS))
    assert case.cells == () and case.faults.runs == 1
    runs = [(c.fs.name, str(c.fault), c.workload.name, c.workload.wait) for c in case.faults.cases]
    assert runs[:3] == [("ext4", "error-writes@acks:1+3", "fsync-retry", 20),
                        ("ext4", "corrupt-writes@acks:1+3,seed=3", "fsync-retry", 20),
                        ("ext4", "flaky:2:1@acks:1+3", "fsync-retry", 20)]
    assert len(runs) == 6 and case.faults.cases[0].power_cuts is None


def test_faults_beside_a_matrix_and_with_power_loss(tmp_path):
    text = FAULTS.replace("window = 3", "power_loss = [\"prefix\"]\ncuts = 2") + """
[matrix]
fs = ["xfs"]
modes = ["barrier"]
workloads = ["fsync-files"]
"""
    case = load_case(write_case(tmp_path, text))
    assert len(case.cells) == 1 and str(case.faults.cases[0].fault) == "error-writes@acks:1"
    assert case.faults.cases[0].power_cuts.models == ("prefix",) and case.faults.cases[0].power_cuts.count == 2


@pytest.mark.parametrize("change, field", [
    (("kinds = [", "kinds = [\"melt-writes\", "), "[faults] kinds[0]"),
    (("\"flaky:2:1\"", "\"flaky:2\""), "[faults] kinds[2]"),
    (("\"flaky:2:1\"", "\"error-writes@acks:2\""), "[faults] kinds[2]"),
    (("trigger = \"acks:1\"", "trigger = \"end\""), "[faults] trigger"),
    (("trigger = \"acks:1\"", "trigger = \"soon\""), "[faults] trigger"),
    (("window = 3", "window = -1"), "[faults] window"),
    (("window = 3", "window = 2.5"), "[faults] window"),
    (("fs = [\"ext4\", \"xfs\"]", "fs = [\"zfs\"]"), "[faults] fs[0]"),
    (("fs = [\"ext4\", \"xfs\"]", "fs = []"), "[faults] fs"),
    (("window = 3", "window = 3\ncolour = 1"), "[faults] colour"),
    (("window = 3", "window = 3\nruns = 0"), "[faults] runs"),
    (("window = 3", "window = 3\npower_loss = [\"sideways\"]"), "[faults] power_loss[0]"),
    (("window = 3", "window = 3\nworkloads = [\"nope\"]"), "[faults] workloads[0]"),
    (("verdicts = [\"silent-loss\", \"error-reported\"]", "verdicts = [\"data-loss\"]"),
     "[expect] faults[0].verdicts[0]"),
    (("verdicts = [\"silent-loss\", \"error-reported\"]", "verdicts = []"), "[expect] faults[0].verdicts"),
    (("fs = \"ext4\"", "fs = \"btrfs\""), "[expect] faults[0].fs"),
    (("kind = \"error-writes\"", "kind = \"drop-writes\""), "[expect] faults[0].kind"),
    (("[workload.fsync-retry]", "[workload.fsync-files]"), "[workload.fsync-files]"),
])
def test_a_bad_faults_field_is_named(tmp_path, change, field):
    text = FAULTS.replace(*change)
    assert text != FAULTS
    with pytest.raises(CaseError) as e:
        load_case(write_case(tmp_path, text))
    assert field in str(e.value)


def test_a_bad_faults_field_exits_2_before_any_guest(tmp_path, capsys):
    from plugpull.cli import main

    path = write_case(tmp_path, FAULTS.replace("window = 3", "window = 0.5"))
    assert main(["reproduce", str(path), "--results", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[faults] window" in err and not (tmp_path / "r.jsonl").exists()


def test_a_case_needs_a_matrix_or_faults_and_expect_faults_needs_faults(tmp_path):
    with pytest.raises(CaseError, match="matrix: required"):
        load_case(write_case(tmp_path, "title = 't'\n"))
    no_faults = "title = 't'\n[matrix]\nfs = ['xfs']\nmodes = ['barrier']\nworkloads = ['fsync-files']\n"
    with pytest.raises(CaseError, match=r"\[expect\] faults: the case has no \[faults\]"):
        load_case(write_case(tmp_path, no_faults + "[[expect.faults]]\nverdicts = ['clean']\n"))


def run(fs, verdict, fault="error-writes@acks:1+3"):
    return FaultResult(f"{fs}/{fault}", fs, fault, "fsync-retry", verdict,
                       spec={"kind": fault.partition("@")[0]})


def test_fault_expectations_pass_and_fail(tmp_path):
    case = load_case(write_case(tmp_path, FAULTS))
    expect = case.faults.expect
    assert fault_expectation_failures(expect, [run("ext4", "silent-loss"), run("xfs", "clean")]) == []
    failures = fault_expectation_failures(expect, [run("ext4", "clean"), run("ext4", "error-reported")])
    assert failures == ["ext4 error-writes@acks:1+3 fsync-retry: expected silent-loss or error-reported, saw clean"]
    assert fault_expectation_failures(expect, [run("ext4", "infra-error")]) == [
        "ext4 error-writes: no fault run was judged"]
    assert fault_expectation_failures(expect, [run("ext4", "silent-loss", "drop-writes@acks:1+3")]) == [
        "ext4 error-writes: no fault run was judged"]


def test_the_fsyncgate_case_runs_fsync_retry_under_error_writes_on_three_filesystems():
    case = load_case(ROOT / "suites" / "cases" / "fsyncgate.toml")
    assert [(c.fs.name, c.fault.kind, c.workload.name) for c in case.faults.cases] == [
        ("ext4", "error-writes", "fsync-retry"), ("xfs", "error-writes", "fsync-retry"),
        ("btrfs", "error-writes", "fsync-retry")]
    assert case.cells == () and case.faults.expect[0].verdicts == ["silent-loss"]
