"""A phase's rate in the unit it is best read in, and the order modes are shown in: what the
text table (`tables`) and the seeds side by side (`seeds`) both read a cell by."""

from plugpull.report.cause import MISSING
from plugpull.results import Phase

OPS, MBS = "op/s", "MiB/s"
BASELINE = "barrier"
MODE_ORDER = ("barrier", "nobarrier", "nocache", "lying", "extlog")


def unit_of(phase: Phase) -> str | None:
    """The rate a phase is best read in: operations when it counted them (or bonnie++ gave
    a file rate), MiB/s when it moved bytes."""
    if phase.op_rate is not None:
        return OPS
    return MBS if phase.mb_rate is not None else None


def rate_of(phase: Phase, unit: str | None) -> float | None:
    return phase.op_rate if unit == OPS else phase.mb_rate if unit == MBS else None


def mode_rank(mode: str) -> tuple[int, str]:
    return (MODE_ORDER.index(mode), "") if mode in MODE_ORDER else (len(MODE_ORDER), mode)


def fmt_rate(value: float | None) -> str:
    if value is None:
        return MISSING
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"
