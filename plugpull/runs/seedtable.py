"""A case file's [seed] table: the seed's own published figures, each quoted from its text,
for the report to set beside plugpull's (plugpull.report.seeds).

    [seed]
    name = "seed 000"
    [[seed.figures]]
    workload = "tree-extract"   # one of [matrix] workloads
    phase = "extract"           # the phase of plugpull's measurement it compares with
    mode = "barrier"            # one of [matrix] modes
    seconds = 123.01            # or rate = ... (op/s, KiB/s: any unit, the same for a phase)
    line = 67                   # the line of the seed's text it comes from
    quote = "... 2:03,01 total"
"""

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from plugpull.errors import UsageError

STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class SeedFigure(BaseModel):
    model_config = STRICT
    workload: str
    phase: str = Field(min_length=1)
    mode: str
    seconds: float | None = Field(None, gt=0)
    rate: float | None = Field(None, gt=0)
    line: int = Field(ge=1)
    quote: str = Field(min_length=1)


class SeedSection(BaseModel):
    model_config = STRICT
    name: str = Field(min_length=1)
    figures: list[SeedFigure] = Field(min_length=1)


def reference_results(case: Path, results: Path) -> Path | None:
    """The committed run of the case (suites/results/CASE.jsonl beside suites/cases/), to set
    beside a new run's; None if there is none or it is the new run's own file."""
    path = Path(case).resolve().parent.parent / "results" / f"{Path(case).stem}.jsonl"
    return path if path.is_file() and path != Path(results).resolve() else None


def seed_table(path: Path, seed: SeedSection | None, workloads: list[str], modes: list[str]) -> dict | None:
    """The [seed] table as the results keep it; UsageError naming the field for a figure of a
    workload or mode the case does not run, or without exactly one of seconds and rate, or
    a phase whose figures mix the two."""
    if seed is None:
        return None
    kinds: dict[tuple[str, str], str] = {}
    for i, figure in enumerate(seed.figures):
        where = f"{path}: [seed] figures[{i}]"
        if figure.workload not in workloads:
            raise UsageError(f"{where}.workload: {figure.workload!r} is not one of [matrix] workloads")
        if figure.mode not in modes:
            raise UsageError(f"{where}.mode: {figure.mode!r} is not one of [matrix] modes")
        if (figure.seconds is None) == (figure.rate is None):
            raise UsageError(f"{where}.seconds: give exactly one of seconds and rate")
        kind = "seconds" if figure.seconds is not None else "rate"
        if kinds.setdefault((figure.workload, figure.phase), kind) != kind:
            raise UsageError(f"{where}.{kind}: the phase's other figures give "
                             f"{kinds[(figure.workload, figure.phase)]}")
    return seed.model_dump(exclude_none=True)
