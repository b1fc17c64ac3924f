"""`plugpull bisect CASE.toml`: each step's kernel judged by the case engine (`runs.caserun`),
which runs the case as `reproduce` does; its outcome, not an exit code, is the verdict."""

from types import SimpleNamespace

import pytest

from plugpull.bisect import Judged, Untestable
from plugpull.bisect.testers import case_judge
from plugpull.errors import GuestError, InfraError, KernelUnfit
from plugpull.runs.caserun import CaseOutcome


class Asked(list):
    outcome = None


@pytest.fixture
def asked(monkeypatch):
    asked = Asked()

    def run_case(request):
        asked.append(request)
        return asked.outcome(request.case)

    monkeypatch.setattr("plugpull.runs.caserun.run_case", run_case)
    monkeypatch.setattr("plugpull.kernels.option.kernel_option", lambda spec, modules: f"kernel of {spec}")
    return asked


def test_a_step_runs_the_case_on_its_kernel_and_a_reproduced_case_passes(tmp_path, asked):
    asked.outcome = lambda case: CaseOutcome(case)
    judge = case_judge("the case", tmp_path, "tcg", "qemu")
    assert judge("build:step-1") == Judged(True, "PASS (reproduced)")
    [request] = asked
    assert (request.case, request.kernels, request.results, request.accel, request.backend) == (
        "the case", (("build:step-1", "kernel of build:step-1"),), tmp_path / "cases" / "step-1.jsonl", "tcg", "qemu")
    assert request.results.parent.is_dir()


def test_a_case_not_reproduced_fails_the_step_and_says_what_was_not_borne_out(tmp_path, asked):
    asked.outcome = lambda case: CaseOutcome(case, failures=("nobarrier: expected unsafe, it is safe",))
    judged = case_judge("the case", tmp_path, "tcg", "qemu")("build:step-2")
    assert judged == Judged(False, "FAIL (not reproduced: nobarrier: expected unsafe, it is safe)")


def test_a_kernel_that_fails_makes_the_step_untestable(tmp_path, monkeypatch):
    def unfit(request):
        raise KernelUnfit("no virtio\nmore")

    monkeypatch.setattr("plugpull.runs.caserun.run_case", unfit)
    monkeypatch.setattr("plugpull.kernels.option.kernel_option", lambda spec, modules: None)
    with pytest.raises(Untestable, match="the kernel failed: no virtio$"):
        case_judge("the case", tmp_path, "tcg", "qemu")("build:step-1")


def test_a_guest_that_died_makes_the_step_untestable(tmp_path, asked):
    error = GuestError("the guest hung\nits console")
    asked.outcome = lambda case: CaseOutcome(case, harness=str(error), error=error)
    with pytest.raises(Untestable, match="the kernel failed: the guest hung$"):
        case_judge("the case", tmp_path, "tcg", "qemu")("build:step-1")


def test_a_cell_the_harness_failed_on_is_the_harness_s_not_a_verdict(tmp_path, asked):
    case = SimpleNamespace(path=tmp_path / "case.toml")
    asked.outcome = lambda case: CaseOutcome(case, failures=("x",), harness="1 cells failed in the harness")
    with pytest.raises(InfraError, match="case.toml on build:step-1: 1 cells failed in the harness"):
        case_judge(case, tmp_path, "tcg", "qemu")("build:step-1")
