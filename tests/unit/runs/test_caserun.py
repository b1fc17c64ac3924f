"""The case engine (`runs.caserun`): a typed request in, an outcome out: per case reproduced or
not, the [expect] lines not borne out, a harness failure kept apart; no guest here (a cell
'runs' by writing the result the test makes of it)."""

from types import SimpleNamespace

import pytest

from tests.case_files import write_case
from plugpull.errors import InfraError, UsageError
from plugpull.results import CellResult, CrashSummary, Env, append_line
from plugpull.runs import caserun, matrix as runs_matrix
from plugpull.runs.caserun import CaseRequest, run_case
from plugpull.runs.cases import load_case

CASE = """title = "t"
source = "s"
[matrix]
fs = ["xfs"]
modes = ["barrier", "nobarrier"]
workloads = ["fsync-files"]
[expect]
safe = ["barrier"]
unsafe = ["nobarrier"]
"""


def summary(clean: int, data_loss: int = 0) -> CrashSummary:
    return CrashSummary(states=clean + data_loss, models=("reorder",), clean=clean, data_loss=data_loss,
                        inconsistent=0, fs_corrupt=0, unmountable=0, kernel_crash=0, infra_error=0,
                        distinct=clean + data_loss)


@pytest.fixture
def cells(monkeypatch):
    """Each cell's result made by `cells.outcome(cell)`; the rigs asked for, in `cells.rigs`."""
    def run_matrix(todo, results, rig, work, judging=None):
        out = [cells.outcome(c) for c in todo]
        for r in out:
            append_line(results, r.to_json())
        return out

    def prepare_rig(accel, kernel, backend, hosts=()):
        cells.rigs.append((accel, kernel, backend, hosts))

    cells.rigs = []
    cells.outcome = lambda c: result(c, summary(10, 10 if c.mode == "nobarrier" else 0))
    monkeypatch.setattr(caserun, "run_matrix", run_matrix)
    monkeypatch.setattr(runs_matrix, "prepare_rig", prepare_rig)
    return cells


def result(cell, crash=None, error=None) -> CellResult:
    return CellResult(key=cell.key(), fs=cell.fs, mode=cell.mode, workload=cell.workload,
                      env=Env(kernel=cell.kernel or "host"), seconds=1.0, crash=crash, error=error)


def request(tmp_path, kernels=(("host", None),), **options) -> CaseRequest:
    return CaseRequest(load_case(write_case(tmp_path, CASE)), kernels, tmp_path / "r.jsonl", "tcg", "qemu", **options)


def test_a_case_borne_out_is_reproduced_on_the_rig_it_asks_for(tmp_path, cells):
    outcome = run_case(request(tmp_path, hosts=("qemu+ssh://h/system",)))
    assert outcome.reproduced and outcome.failures == () and outcome.harness is None and outcome.error is None
    assert cells.rigs == [("tcg", None, "qemu", ("qemu+ssh://h/system",))]
    [ran] = outcome.kernels
    assert [r.mode for r in ran.cells] == ["barrier", "nobarrier"] and outcome.finished() == {"host": []}


def test_a_case_not_borne_out_says_which_expect_failed(tmp_path, cells):
    cells.outcome = lambda c: result(c, summary(20))
    outcome = run_case(request(tmp_path))
    assert not outcome.reproduced and outcome.harness is None
    assert len(outcome.failures) == 1 and "nobarrier" in outcome.failures[0]


def test_a_cell_the_harness_failed_on_is_kept_apart_from_the_verdicts(tmp_path, cells):
    cells.outcome = lambda c: result(c, summary(20)) if c.mode == "barrier" else result(c, error="QEMU died")
    outcome = run_case(request(tmp_path))
    assert outcome.harness == "1 cells failed in the harness" and outcome.error is None
    assert not outcome.reproduced and outcome.failures  # nobarrier has no states: not borne out either


def test_no_crash_holds_no_expect_about_crash_states(tmp_path, cells):
    cells.outcome = lambda c: result(c, None)
    assert run_case(request(tmp_path, no_crash=True)).reproduced
    assert not run_case(request(tmp_path / "..", no_crash=False)).reproduced


def test_on_several_kernels_each_failure_names_its_kernel(tmp_path, cells):
    newer = SimpleNamespace(release="6.12.0-1-amd64")
    cells.outcome = lambda c: result(c, summary(10, 10 if c.kernel and c.mode == "nobarrier" else 0))
    outcome = run_case(request(tmp_path, kernels=(("host", None), ("debian:6.12", newer))))
    assert [k.name for k in outcome.kernels] == ["host", "debian:6.12"]
    assert [f.split(":")[0] for f in outcome.failures] == ["host kernel"]


def test_an_error_ends_the_case_and_is_its_outcome_not_a_verdict(tmp_path, cells, monkeypatch):
    def died(*a):
        raise InfraError("QEMU died before the guest was ready\nits log")

    monkeypatch.setattr(runs_matrix, "prepare_rig", died)
    outcome = run_case(request(tmp_path))
    assert isinstance(outcome.error, InfraError) and outcome.harness == "QEMU died before the guest was ready\nits log"
    assert outcome.kernels == () and not outcome.reproduced


def test_a_usage_error_is_raised_not_kept(tmp_path, cells, monkeypatch):
    def refused(*a):
        raise UsageError("--kernel: no such kernel")

    monkeypatch.setattr(runs_matrix, "prepare_rig", refused)
    with pytest.raises(UsageError):
        run_case(request(tmp_path))
