"""A case file's [faults] table and its [[expect.faults]] entries.

[faults] is declared as settings rows (`runs.settings.Setting`), like [crash] and [matrix]:
the case loader builds its validating model from `FAULT_SETTINGS`, so each value is checked
by its row's kind and a bad one is named by its field. Every fault kind runs on every
filesystem and workload, switched on at `trigger` for `window` seconds.
"""

from dataclasses import dataclass

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from typing import Annotated

from plugpull.crash.record import Trigger
from plugpull.errors import UsageError
from plugpull.faults.faultspec import RUNS_MAX, WINDOW_MAX, FaultSpecError, parse_fault
from plugpull.results import FAULT_VERDICTS, FaultResult
from plugpull.runs.settings import Choice, FilesystemName, Setting, Spelled, Whole, WorkloadName
from plugpull.testbed.fs import FILESYSTEMS
from plugpull.testbed.workloads import WORKLOADS


def _kind(text: str) -> None:
    """A fault kind, with its seed if it takes one: the trigger and window are fields of their own."""
    try:
        fault = parse_fault(text)
    except FaultSpecError as e:
        raise UsageError(str(e).partition(": ")[2]) from None
    if fault.trigger is not None or fault.window is not None:
        raise UsageError(f"{text!r}: give the trigger and the window as [faults] trigger and window")


def _trigger(text: str) -> None:
    """"" (on from the start), or a power cut's trigger other than `end`."""
    if text and Trigger.parse(text).kind == "end":
        raise UsageError("a fault at the workload's end injects nothing")


def _model(text: str) -> None:
    from plugpull.faults.powercut import power_cuts

    power_cuts(text, 1)


FAULT_SETTINGS = (
    Setting("fs", FilesystemName("filesystem", lambda: FILESYSTEMS), "filesystems under the fault", case="faults.fs",
            many=("case",)),
    Setting("kinds", Spelled(_kind), "fault kinds: error-writes, drop-writes, corrupt-writes[,seed=N], "
            "corrupt-reads[,seed=N], flaky:UP:DOWN", case="faults.kinds", many=("case",)),
    Setting("trigger", Spelled(_trigger), "when the fault comes on: acks:N, writes:N, time:SECONDS "
            "(none: from the start)", case="faults.trigger", case_default=""),
    Setting("window", Whole(0, WINDOW_MAX), "seconds the fault lasts (0: until the workload ends)", case="faults.window",
            case_default=0),
    Setting("workloads", WorkloadName("workload", lambda: WORKLOADS), "workloads under the fault",
            case="faults.workloads", many=("case",), case_default=("fsync-retry",)),
    Setting("runs", Whole(1, RUNS_MAX), "runs of each filesystem x kind x workload", case="faults.runs", case_default=1),
    Setting("power_loss", Spelled(_model), "then power loss: the models judging cuts of each run's write log "
            "after the fault came on (none: no power cut)", case="faults.power_loss", many=("case",),
            case_default=()),
    Setting("cuts", Whole(1), "with power_loss: cuts per model and run", case="faults.cuts", case_default=4),
)


def _verdict(value: str) -> str:
    if value not in FAULT_VERDICTS:
        raise ValueError(f"unknown fault verdict {value!r}; known: {', '.join(FAULT_VERDICTS)}")
    return value


class FaultExpectation(BaseModel):
    """The runs it matches (an empty field matches all) each end with one of `verdicts`."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    fs: str = ""
    kind: str = ""
    workload: str = ""
    verdicts: Annotated[list[Annotated[str, AfterValidator(_verdict)]], Field(min_length=1)]

    def matches(self, run: FaultResult) -> bool:
        kind = (run.spec or {}).get("kind") or run.fault.partition("@")[0].partition("+")[0].partition(":")[0]
        return all(not want or want == have for want, have in
                   ((self.fs, run.fs), (self.kind, kind), (self.workload, run.workload)))

    def describe(self) -> str:
        named = " ".join(v for v in (self.fs, self.kind, self.workload) if v)
        return named or "every fault run"


@dataclass(frozen=True)
class FaultPlan:
    cases: tuple  # FaultCase, one per filesystem x kind x workload
    runs: int = 1
    expect: tuple = ()  # FaultExpectation


def fault_cases(section, params: dict) -> tuple:
    """The FaultCases of a validated [faults] section; `params`: workload -> its parameters."""
    from plugpull.faults.powercut import power_cuts
    from plugpull.faults.inject import FaultCase
    from plugpull.testbed.fs import filesystem
    from plugpull.testbed.workloads import workload

    when = (f"@{section.trigger}" if section.trigger else "") + (f"+{section.window}" if section.window else "")
    cuts = power_cuts(",".join(section.power_loss), section.cuts) if section.power_loss else None
    faults = []
    for kind in section.kinds:
        main, comma, seed = kind.partition(",")
        faults.append(parse_fault(main + when + comma + seed))
    return tuple(FaultCase(filesystem(fs), fault, workload(name, **params.get(name, {})), power_cuts=cuts)
                 for fs in section.fs for fault in faults for name in section.workloads)


def check_expectations(section, expectations) -> str | None:
    """Where an [[expect.faults]] entry names what [faults] does not run, e.g.
    "faults[0].fs: 'zfs' is not in [faults] fs", or None."""
    kinds = [k.partition(",")[0].partition(":")[0] for k in section.kinds]
    for i, e in enumerate(expectations):
        for name, value, known in (("fs", e.fs, section.fs), ("kind", e.kind, kinds),
                                   ("workload", e.workload, section.workloads)):
            if value and value not in known:
                return f"faults[{i}].{name}: {value!r} is not in [faults] {name if name != 'kind' else 'kinds'}"
    return None


def fault_expectation_failures(expectations, runs: list[FaultResult]) -> list[str]:
    """What the [[expect.faults]] entries say and the fault runs do not show."""
    failures = []
    for e in expectations:
        matched = [r for r in runs if e.matches(r) and r.verdict != "infra-error"]
        if not matched:
            failures.append(f"{e.describe()}: no fault run was judged")
        for r in matched:
            if r.verdict not in e.verdicts:
                failures.append(f"{r.fs} {r.fault} {r.workload}: expected {' or '.join(e.verdicts)}, saw {r.verdict}")
    return failures
