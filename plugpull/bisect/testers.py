"""What a real bisect builds and runs: each commit built as `kernels build src:CLONE` does, and a
reproducer script run in a guest of that kernel, as `reproducer --run` runs one, or a case file
run on it by the case engine, as `reproduce` runs one (`runs.caserun`).

A build that fails, or that this commit's tree refuses (its Kconfig cannot give what plugpull
needs), is `Untestable`; so is a kernel that fails under the test. A missing tool, a full
disk, QEMU failing to start stay harness errors.
"""

from pathlib import Path

from plugpull.bisect.engine import Judged, Untestable
from plugpull.errors import GuestError, InfraError, KernelUnfit, UsageError
from plugpull.kernels.build import BuildRequest, build_kernel
from plugpull.kernels.build.make import BuildFailed
from plugpull.kernels.build.buildspec import TreeSource

NAME_PREFIX = "bisect-"


def build_name(commit: str) -> str:
    """A step's build, readably: `bisect-<12 hex digits>`, booted as --kernel build:NAME."""
    return f"{NAME_PREFIX}{commit[:12]}"


def builder(clone: Path):
    """`build(commit)` for the clone git checked the commit out in: its `build:NAME` spec.
    Every step builds in the clone's one workspace, so a step after the first is incremental.
    A clone kept as `src` is compiled into `out` beside it, the layout of a Debian work copy, so
    that ccache, which names a source relative to the object folder (`../src`), finds the
    objects of a Debian build of the same source (`plan.clone_for` keeps every clone so)."""
    def build(commit: str) -> str:
        try:
            return build_kernel(BuildRequest(TreeSource(clone), [], build_name(commit), None, beside=True)).spec
        except BuildFailed as e:
            raise Untestable(f"build failed: {e}") from None
        except UsageError as e:
            raise Untestable(f"build refused: {e}") from None
    return build


def booted(spec: str, accel, backend):
    """The rig of a built kernel; a kernel that lacks a driver the guest needs, or does not
    come up on its first boot, is Untestable."""
    from plugpull.guest.rig import prepare_rig
    from plugpull.kernels.option import kernel_option
    try:
        return prepare_rig(accel, kernel_option(spec, None), backend)
    except KernelUnfit as e:
        raise Untestable(f"the kernel is unfit: {e}") from None
    except GuestError as e:
        raise Untestable(f"the kernel did not come up: {str(e).splitlines()[0]}") from None


def script_judge(text: str, runs: int, accel, backend):
    """`judge(spec)`: the sh reproducer `text` run `runs` times in guests of that kernel; FAIL
    at the first run that fails, PASS when all pass."""
    from plugpull.reproducer.inguest import run_in_guest

    def judge(spec: str) -> Judged:
        rig = booted(spec, accel, backend)
        for run in range(1, runs + 1):
            try:
                outcome = run_in_guest(rig, text)
            except GuestError as e:
                raise Untestable(f"the guest died or hung in run {run}: {str(e).splitlines()[0]}") from None
            if outcome.kernel is not None:
                raise Untestable(f"the kernel under test failed in run {run}: {outcome.kernel}")
            if not outcome.passed:
                said = outcome.lines[-1] if outcome.lines else "FAIL"
                return Judged(False, f"FAIL at run {run} of {runs}: {said}")
        return Judged(True, f"PASS {runs}/{runs}")
    return judge


def case_judge(case, out: Path, accel, backend):
    """`judge(spec)`: the case run by the case engine on that kernel, its results under
    out/cases/; reproduced is PASS, not reproduced FAIL. A kernel unfit for the guest, or one
    that fails under it, is Untestable; a cell the harness failed on is the harness's."""
    from plugpull.kernels.option import kernel_option
    from plugpull.runs.caserun import CaseRequest, run_case

    def judge(spec: str) -> Judged:
        results = out / "cases" / f"{spec.split(':', 1)[1]}.jsonl"
        results.parent.mkdir(parents=True, exist_ok=True)
        try:
            outcome = run_case(CaseRequest(case, ((spec, kernel_option(spec, None)),), results, accel, backend))
        except KernelUnfit as e:
            raise Untestable(f"the kernel failed: {str(e).splitlines()[0]}") from None
        if isinstance(outcome.error, GuestError):
            raise Untestable(f"the kernel failed: {str(outcome.error).splitlines()[0]}")
        if outcome.harness is not None:
            raise InfraError(f"{case.path} on {spec}: {outcome.harness} (see {results.with_suffix('.log')})")
        if outcome.reproduced:
            return Judged(True, "PASS (reproduced)")
        return Judged(False, f"FAIL (not reproduced: {outcome.failures[0]})")
    return judge
