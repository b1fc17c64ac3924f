"""Throughput of a workload in a mode: the seeds' side of the trade-off, measured in the same
guest and disk setup as the crash runs, without the recorder (or with it, to measure its cost)."""

import time
from dataclasses import asdict
from pathlib import Path

from plugpull.guest.rig import Rig
from plugpull.errors import InfraError
from plugpull.lab.parsers import parse_bonnie, parse_fio, parse_smallfiles
from plugpull.lab.testbed import MOUNTPOINT, BedSpec, testbed
from plugpull.results import Phase, Throughput

PARSERS = {"smallfiles": parse_smallfiles, "fio": parse_fio, "bonnie": parse_bonnie}
STEP_TIMEOUT = 3600.0


def measure(directory: Path, bed: BedSpec, rig: Rig, recorded: bool = False) -> Throughput:
    """Run the workload's timed steps and time their phases. A step timed by the
    host includes one channel round trip (about 20 ms), negligible against the phases."""
    log = directory / "overhead.log" if recorded else None
    phases: list[Phase] = []
    with testbed(directory, bed, rig, write_log=log) as running:
        for step in bed.workload.steps(MOUNTPOINT):
            started = time.monotonic()
            result = running.machine.run(step.command, timeout=STEP_TIMEOUT)
            elapsed = time.monotonic() - started
            if result.rc != 0:
                raise InfraError(f"step {step.name} failed in the guest (rc={result.rc}): "
                                 f"{result.stderr.decode(errors='replace').strip()[-500:]}")
            if step.parser:
                phases += PARSERS[step.parser](result.text)
            else:
                phases.append(Phase(step.name, elapsed, step.ops, step.bytes))
        queue = running.queue_write_cache
        accel_used = str(running.machine.accel)
    if log is not None:
        log.unlink(missing_ok=True)
    return Throughput(phases=tuple(phases), queue_write_cache=queue, accel=accel_used, recorded=recorded,
                      profile=asdict(bed.profile) if bed.profile else None,
                      real_disk=str(bed.real_disk) if bed.real_disk else None)
