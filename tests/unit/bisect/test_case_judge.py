"""`plugpull bisect CASE.toml`: each step's kernel judged by running the case as `reproduce` does."""

import pytest

from plugpull.bisect import Judged, Untestable
from plugpull.cli import bisect as bisect_cli
from plugpull.cli.common import EXIT_FOUND, EXIT_OK
from plugpull.errors import KernelUnfit


class Calls(list):
    code = EXIT_OK


def test_a_step_runs_the_case_on_its_kernel_and_a_reproduced_case_passes(tmp_path, monkeypatch):
    seen = Calls()

    def fake_reproduce(args, case, kernels, backend, finished):
        seen.append((case, kernels, args.results))
        return seen.code

    monkeypatch.setattr("plugpull.cli.reproduce.reproduce_case", fake_reproduce)
    monkeypatch.setattr("plugpull.kernels.option.kernel_option", lambda spec, modules: f"kernel of {spec}")
    judge = bisect_cli.case_judge("the case", tmp_path, "tcg", "qemu")
    assert judge("build:step-1") == Judged(True, "PASS (reproduced)")
    assert seen == [("the case", [("build:step-1", "kernel of build:step-1")], tmp_path / "cases" / "step-1.jsonl")]
    seen.code = EXIT_FOUND
    assert judge("build:step-2").passed is False


def test_a_kernel_that_fails_makes_the_step_untestable(tmp_path, monkeypatch):
    def unfit(*_):
        raise KernelUnfit("no virtio\nmore")

    monkeypatch.setattr("plugpull.cli.reproduce.reproduce_case", unfit)
    monkeypatch.setattr("plugpull.kernels.option.kernel_option", lambda spec, modules: None)
    with pytest.raises(Untestable, match="the kernel failed: no virtio$"):
        bisect_cli.case_judge("the case", tmp_path, "tcg", "qemu")("build:step-1")
