"""Throughput of a workload in a mode: the seeds' side of the trade-off, measured in the same
guest and disk setup as the crash runs, without the recorder (or with it, to measure its cost).

Around each timed step the disk's /sys/block stat is read (outside the timed window), so each
figure comes with its cause: the writes, sectors and flushes the disk saw."""

import time
from dataclasses import asdict
from functools import reduce
from operator import add
from pathlib import Path

from plugpull.errors import InfraError
from plugpull.guest.rig import Rig
from plugpull.results import DiskIO, Phase, StatError, Throughput
from plugpull.testbed.bed import MOUNTPOINT, BedSpec, testbed
from plugpull.throughput.diskstat import phase_ios, physical_disk, read_stat, with_stat
from plugpull.throughput.parsers import parse_bonnie, parse_fio, parse_smallfiles

PARSERS = {"smallfiles": parse_smallfiles, "fio": parse_fio, "bonnie": parse_bonnie}
STEP_TIMEOUT = 3600.0


def run_step(machine, step, device: str) -> tuple[list[Phase], DiskIO]:
    """One timed step: its phases (each with its io when known) and the step's whole io."""
    before = read_stat(machine, device)
    started = time.monotonic()
    result = machine.run(with_stat(step.command, device), timeout=STEP_TIMEOUT)
    elapsed = time.monotonic() - started
    after = read_stat(machine, device)
    if result.rc != 0:
        raise InfraError(f"step {step.name} failed in the guest (rc={result.rc}): "
                         f"{result.stderr.decode(errors='replace').strip()[-500:]}")
    try:
        io = DiskIO.between(before, after, elapsed, device)
        if not step.parser:
            return [Phase(step.name, elapsed, step.ops, step.bytes, io=io)], io
        return phase_ios(result.text, PARSERS[step.parser](result.text), device), io
    except StatError as e:
        raise InfraError(f"step {step.name}: {e}") from None


def measure(directory: Path, bed: BedSpec, rig: Rig, recorded: bool = False) -> Throughput:
    """Run the workload's timed steps and time their phases. A step timed by the
    host includes one channel round trip (about 20 ms), negligible against the phases."""
    log = directory / "overhead.log" if recorded else None
    phases: list[Phase] = []
    ios: list[DiskIO] = []
    with testbed(directory, bed, rig, write_log=log) as running:
        device = physical_disk(running.machine)
        for step in bed.workload.steps(MOUNTPOINT):
            step_phases, io = run_step(running.machine, step, device)
            phases += step_phases
            ios.append(io)
        queue = running.queue_write_cache
        accel_used = str(running.machine.accel)
    if log is not None:
        log.unlink(missing_ok=True)
    return Throughput(phases=tuple(phases), queue_write_cache=queue, accel=accel_used, recorded=recorded,
                      profile=asdict(bed.profile) if bed.profile else None,
                      real_disk=str(bed.real_disk) if bed.real_disk else None,
                      io=reduce(add, ios) if ios else None)
