"""The cause beside a throughput figure: what the disk did in the phase (flushes per 1000
operations, MiB written per flush, the share of the phase the disk spent flushing), and a
predictor of the barrier penalty from it.

The predictor: a barrier run takes the nobarrier run's time plus, for each flush it sent,
one flush's cost: the disk profile's added flush latency plus the disk's own mean flush time
measured in the barrier run (/sys/block stat field 17 over field 16). Per unit of work (an
operation, or a MiB for a phase that only moves bytes), so runs of different sizes compare."""

from dataclasses import dataclass

from plugpull.results import CellResult, DiskIO, Phase

CAUSE_HEADER = ("predicted", "flushes/kop", "MiB/flush", "flush time")
CAUSE_NOTE = ("predicted: nobarrier's time + barrier's flushes x (the profile's flush latency + the "
              "disk's own mean flush time), as a ratio to barrier like 'vs barrier'. flushes/kop: flushes "
              "per 1000 operations; MiB/flush: MiB written per flush; flush time: the share of the phase "
              "the disk spent flushing (/sys/block stat). '*': over the whole run (the benchmark does "
              "not report the disk per phase).")
MISSING = "-"
NOBARRIER = "nobarrier"


@dataclass(frozen=True)
class Cause:
    io: DiskIO
    ops: int | None
    whole_run: bool  # io covers every phase of the run, not this phase alone


def cause(cell: CellResult, phase_name: str) -> Cause | None:
    """The phase's own io, or the run's when the benchmark gave none per phase."""
    phase = cell.phase(phase_name)
    if phase is not None and phase.io is not None:
        return Cause(phase.io, phase.ops, False)
    if cell.throughput is not None and cell.throughput.io is not None:
        return Cause(cell.throughput.io, None, True)
    return None


def work_rate(phase: Phase) -> tuple[float, float] | None:
    """(units of work per second, units done): operations, or MiB for a byte-only phase."""
    if phase.seconds is None:
        return None
    rate = phase.op_rate if phase.op_rate is not None else phase.mb_rate
    return (rate, rate * phase.seconds) if rate else None


def flush_cost_ms(cell: CellResult, io: DiskIO) -> float | None:
    """One flush's cost in the cell's run: the profile's added latency and the disk's own."""
    profile = cell.throughput.profile if cell.throughput else None
    added = profile.get("flush_ms") if isinstance(profile, dict) else 0
    if not isinstance(added, (int, float)):
        return None
    return added + (io.mean_flush_ms or 0)


def predicted_ratio(cell: CellResult, barrier: CellResult | None, phase_name: str) -> float | None:
    """For a nobarrier cell: its time over the barrier time the predictor expects."""
    if cell.mode != NOBARRIER or barrier is None:
        return None
    mine, theirs = cell.phase(phase_name), barrier.phase(phase_name)
    if mine is None or theirs is None or theirs.io is None:
        return None
    nobarrier_work, barrier_work = work_rate(mine), work_rate(theirs)
    cost = flush_cost_ms(barrier, theirs.io)
    if nobarrier_work is None or barrier_work is None or cost is None or not barrier_work[1]:
        return None
    per_unit = 1 / nobarrier_work[0]
    return per_unit / (per_unit + theirs.io.flushes / barrier_work[1] * cost / 1000)


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"x{value:.1f}" if value >= 1 else f"x{value:.2f}"


def fmt(value: float | None, digits: int = 1) -> str:
    return MISSING if value is None else f"{value:.{digits}f}"


def cause_columns(cell: CellResult, barrier: CellResult | None, phase_name: str | None) -> tuple[str, ...]:
    """The four cause columns of a cell on a phase, as text."""
    if phase_name is None:
        return (MISSING,) * len(CAUSE_HEADER)
    found = cause(cell, phase_name)
    predicted = fmt_ratio(predicted_ratio(cell, barrier, phase_name))
    if found is None:
        return (predicted, MISSING, MISSING, MISSING)
    io, mark = found.io, "*" if found.whole_run else ""
    share = io.flush_share
    return (predicted, fmt(io.flushes_per_kop(found.ops)),
            fmt(io.mib_per_flush, 2) + mark if io.mib_per_flush is not None else MISSING,
            f"{100 * share:.1f}%{mark}" if share is not None else MISSING)


def has_cause(cells) -> bool:
    return any(c.throughput and (c.throughput.io or any(p.io for p in c.phases)) for c in cells)
