"""The case engine: one case file's run, asked for by a typed request, answered by an outcome.

`plugpull reproduce`, `plugpull bisect` (each step's kernel) and `--cluster` runs ask it the
same way: a `CaseRequest` (the case as loaded, the kernels to run it on, where its results go,
the rig's accelerator and backend, the hosts or the cluster that check its states) gives a
`CaseOutcome`: per kernel what ran, the [expect] lines the results do not bear out, and a
harness failure kept apart from them. It prints only its progress (standard error); what the
run found is the caller's to say.
"""

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import PlugpullError, ToolMissing, UsageError, describe
from plugpull.guest.rig import prepare_rig
from plugpull.log import run_log
from plugpull.results import read_cells
from plugpull.runs.cases import Case, expectation_failures, replay_failures
from plugpull.runs.faultcase import fault_expectation_failures
from plugpull.runs.faultruns import run_faults
from plugpull.runs.matrix import for_kernel, kernel_tag, run_matrix, run_on_kernels


@dataclass(frozen=True)
class CaseRequest:
    """One case's run. `kernels`: ((name, KernelSource or None for the host's), ...);
    `results`: a [matrix] case's JSON lines (its log beside them); `hosts`: libvirt hosts
    that check the states; `cluster`: a `ClusterJudge` (the scheduler's address and TLS) that
    checks them instead; `scale`: the factor the case was loaded with, said in its title;
    `no_crash`: the throughput side alone, so [expect], which is about crash states, is not held."""

    case: Case
    kernels: tuple
    results: Path | None = None
    accel: object = None
    backend: object = None
    hosts: tuple = ()
    cluster: object = None
    scale: float = 1.0
    no_crash: bool = False


@dataclass(frozen=True)
class KernelRun:
    """What ran on one kernel: the cells' results, the fault runs; a [replay] case: its recheck
    (`replay`, as `runs.replaycase.run_replay` gives it) and the release it booted."""

    name: str
    tag: str
    cells: tuple = ()
    faults: tuple = ()
    replay: dict | None = None
    release: str = ""
    failures: tuple = ()


@dataclass(frozen=True)
class CaseOutcome:
    """`failures`: the [expect] lines not borne out (kernel-named with several kernels);
    `harness`: why the harness failed, never a verdict (cells or runs it failed on, or the
    `error` that ended the case, the kernels after it not run)."""

    case: Case
    kernels: tuple = ()
    failures: tuple = ()
    harness: str | None = None
    error: Exception | None = None

    @property
    def reproduced(self) -> bool:
        return self.harness is None and not self.failures

    def finished(self) -> dict:
        """Per kernel name whose run ended: its fault runs, or a [replay] case's recheck."""
        return {k.name: (k.replay if self.case.replay else list(k.faults)) for k in self.kernels}


def run_case(request: CaseRequest) -> CaseOutcome:
    """The case on each of its kernels, then held to its [expect] table. A usage error (an
    unfit kernel too) or a missing tool is raised; any other error ends the case, and its
    outcome says so (`error`, `harness`)."""
    done: list[KernelRun] = []
    try:
        harness = (_replay_case if request.case.replay else _matrix_case)(request, done)
    except (UsageError, ToolMissing):
        raise
    except Exception as e:
        said = str(e) if isinstance(e, PlugpullError) else describe(e)
        return CaseOutcome(request.case, tuple(done), _failures(done), harness=said, error=e)
    return CaseOutcome(request.case, tuple(done), _failures(done), harness)


def _failures(done: list) -> tuple:
    named = len(done) > 1
    return tuple(f"{k.tag or 'host kernel'}: {f}" if named else f for k in done for f in k.failures)


def _matrix_case(request: CaseRequest, done: list) -> str | None:
    """A [matrix] case: its cells and fault runs on each kernel, into `request.results`, each
    kernel's run added to `done` as it ends; what the harness failed on, if anything."""
    case, results = request.case, request.results
    plan = case.faults
    faults = f", {len(plan.cases) * plan.runs} fault runs" if plan else ""
    print(f"{case.title}\n  {case.source}\n  {len(case.cells)} cells{faults}, scale {request.scale:g}"
          + (f", on {len(request.kernels)} kernels" if len(request.kernels) > 1 else ""), file=sys.stderr)

    def run(rig, name, tag, work):
        ran = run_matrix(for_kernel(list(case.cells), tag), results, rig, work, judging=request.cluster)
        faulted = run_faults(list(plan.cases), plan.runs, rig, work / "faults", results) if plan else []
        done.append(KernelRun(name, tag, tuple(ran), tuple(faulted)))
        return [done[-1]]

    with run_log(results.with_suffix(".log")):
        run_on_kernels(list(request.kernels), request.accel, request.backend, request.hosts, run)
    judged = {cell.key: cell for cell in read_cells(results)[0]}
    for i, k in enumerate(done):
        mine = [judged[c.key()] for c in for_kernel(list(case.cells), k.tag) if c.key() in judged]
        found = [] if request.no_crash else expectation_failures(case.expected_on(k.name), mine)
        found += fault_expectation_failures(case.faults.expect, list(k.faults)) if case.faults else []
        done[i] = KernelRun(k.name, k.tag, k.cells, k.faults, failures=tuple(found))
    cells = sum(1 for k in done for r in k.cells if r.error)
    runs = sum(1 for k in done for r in k.faults if r.verdict == "infra-error")
    return ", ".join(f"{n} {what} failed in the harness" for n, what in ((cells, "cells"), (runs, "fault runs"))
                     if n) or None


def _replay_case(request: CaseRequest, done: list) -> str | None:
    """A [replay] case: its kept state rebuilt and rechecked as `plugpull replay` does, on each
    kernel, each held to its [expect] table."""
    from plugpull.paths import make_tempdir
    from plugpull.runs.replaycase import load_replay, run_replay

    case = request.case
    scratch = make_tempdir("reproduce")
    harness = []
    try:
        loaded = load_replay(case.replay, scratch)
        print(f"{case.title}\n  {case.source}\n  replay: {case.replay.describe()}", file=sys.stderr)
        for name, kernel in request.kernels:
            rig = prepare_rig(request.accel, kernel, request.backend)
            r = run_replay(case.replay, rig, scratch, loaded)
            found = replay_judged(case.expected_on(name), r)
            harness += [f"{name}: the recheck failed in the harness"] if found is None else []
            done.append(KernelRun(name, kernel_tag(kernel), replay=r,
                                  release=rig.image.kernel_release, failures=tuple(found or ())))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return "; ".join(harness) or None


def replay_judged(case: Case, r: dict) -> list[str] | None:
    """What a recheck `r` does not bear out of `case`'s [expect] table (and a rebuilt state
    that differs from the kept one); None when the harness failed on it."""
    if r["verdict"] == "infra-error":
        return None
    same_image = not r["digest_expected"] or r["digest"] == r["digest_expected"]
    return replay_failures(case, r["verdict"]) + ([] if same_image else ["the rebuilt state differs from the kept one"])
