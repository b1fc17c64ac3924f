"""Fault runs in turn: each `FaultCase` run as often as asked, each result appended to the
results file as it ends (`plugpull faults`, and a case file's [faults] table)."""

import logging
import time
from pathlib import Path

from plugpull.errors import InfraError
from plugpull.faults.inject import run_fault
from plugpull.results import append_line
from plugpull.results.faults import FaultResult, fault_key

log = logging.getLogger(__name__)


def run_faults(cases: list, runs: int, rig, out: Path, results: Path) -> list[FaultResult]:
    """Every case `runs` times, each FaultResult appended to `results` as it ends."""
    done = []
    for n, case in enumerate(cases):
        for i in range(runs):
            result = one_run(out / f"{n:03d}-{case.fs.name}-{i}", case, rig, i)
            append_line(results, result.to_json())
            done.append(result)
    return done


def one_run(directory: Path, case, rig, number: int) -> FaultResult:
    """One run as a FaultResult; a harness failure is its infra-error, never a filesystem verdict."""
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kernel = rig.image.kernel_release
    try:
        result = run_fault(directory, case, rig).to_result(number, kernel, started)
    except InfraError as e:
        fault, name = str(case.fault), case.workload.name
        result = FaultResult(fault_key(case.fs.name, fault, name, case.workload.params(), number), case.fs.name,
                             fault, name, "infra-error", str(e).splitlines()[0], params=case.workload.params(),
                             spec=case.fault.to_json(), run=number, kernel=kernel, started=started)
    log.info("%s %s %s: %s (%s)", result.fs, result.fault, result.workload, result.verdict, result.reason)
    return result
