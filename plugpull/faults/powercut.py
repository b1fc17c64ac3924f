"""Fault, then power loss, as one run: the write log of a fault run, from the moment the
fault came on to the workload's end, cut and judged with the power-loss models. Each cut
owes the acks that reached the host before the log had got there, as in `plugpull crash`.
The log holds what reached the disk through the fault: failed writes are absent, dropped
ones too, corrupted ones as they were corrupted."""

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from plugpull.check.checker import Checker
from plugpull.check.verdict import Ack
from plugpull.crash.judge import StateJob, judge, remove_states
from plugpull.crash.record import Record
from plugpull.errors import UsageError
from plugpull.powerloss.models import parse_model, parse_user_model
from plugpull.powerloss.writelog import entry_index_at
from plugpull.values import names, once_each


@dataclass(frozen=True)
class PowerCuts:
    models: tuple[str, ...] = ("prefix",)
    count: int = 4  # cuts per model, spread evenly over the fault and what followed it
    seed: int = 1


def power_cuts(models: str, count: int) -> PowerCuts:
    """From `--power-loss MODEL,...` and `--cuts N`; UsageError naming the bad one."""
    if count < 1:
        raise UsageError(f"bad --cuts {count}: at least 1")
    try:
        listed = names(models)
    except ValueError as e:
        raise UsageError(f"bad --power-loss: {e}") from None
    for name in listed:
        try:
            parse_user_model(name)
        except ValueError as e:
            raise UsageError(f"bad --power-loss {name!r}: {e}") from None
    try:
        once_each(listed, lambda text: str(parse_model(text)))
    except ValueError as e:
        raise UsageError(f"bad --power-loss: {e}") from None
    return PowerCuts(listed, count)


def spread(first: int, last: int, count: int) -> list[int]:
    """`count` cuts from just after `first` to `last` inclusive, evenly, without repeats."""
    if last <= first:
        return [last] if last > 0 else []
    span = last - first
    return sorted({first + max(1, round(span * (i + 1) / count)) for i in range(count)})


def judge_power_cuts(directory: Path, run, rig, cuts: PowerCuts) -> dict[str, dict[str, int]]:
    """model -> verdict -> count over the cuts; `directory` holds base.img and write.log."""
    log = directory / "write.log"
    acks = [Ack(ident, stamp, entry_index_at(log, stamp)) for ident, stamp in zip(run.told.acks, run.told.stamps)
            if stamp is not None]
    rec = Record(directory, {}, acks)
    jobs = [StateJob(model, cut) for model in cuts.models
            for cut in spread(run.entries_at_on, run.entries_at_end, cuts.count)]
    judged = judge(rec, jobs, Checker(rig, run.case.fs), run.case.workload, cuts.seed, directory / "states")
    try:
        counts: dict[str, Counter] = {}
        for job, j in zip(jobs, judged):
            counts.setdefault(job.model, Counter())[str(j.verdict.verdict)] += 1
        return {model: dict(c) for model, c in counts.items()}
    finally:
        remove_states([j.state for j in judged])
