"""Case files (suites/cases/*.toml): a seed's experiment, or a reported corruption case, as
data. `load_case` validates every field and names the one that is wrong.

A case records and checks a workload ([matrix], [workload], [crash]; [faults]) or rechecks
one state of a kept record ([replay], runs/replaycase.py). Its [expect] table says what must
be seen: `unsafe`/`safe` modes, and `verdicts`, per mode a verdict some state of it must have
(the [replay] state's own). `plugpull reproduce` exits 1 when the table is not borne out."""

import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from plugpull.errors import UsageError
from plugpull.files import TEXT_MAX, check_input, read_regular_text
from plugpull.runs.faultcase import (FAULT_SETTINGS, FaultExpectation, FaultPlan, check_expectations,
                                      fault_cases)
from plugpull.check.verdict import POWER_CUT_VERDICTS, Verdict
from plugpull.crash.spec import CrashSpec
from plugpull.results import CellResult
from plugpull.runs.matrix import cells, with_user_scripts
from plugpull.runs.replaycase import ReplayCase, ReplaySection, replay_case
from plugpull.runs.seedtable import SeedSection, seed_table
from plugpull.runs.settings import SETTINGS, Setting, kernel_name, meaning
from plugpull.values import once_each, shown
from plugpull.testbed.workloads import workload

SCALABLE = ("files", "count", "transactions", "mib")  # bonnie++ -n stays: fewer than 16k files are too fast to time
EXPECTABLE = tuple(str(v) for v in POWER_CUT_VERDICTS if v != Verdict.INFRA_ERROR)
STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


@dataclass(frozen=True)
class Case:
    path: Path
    title: str
    source: str
    summary: str
    cells: tuple
    unsafe: tuple = ()
    safe: tuple = ()
    seed: dict | None = None  # the [seed] table: the seed's published figures
    faults: FaultPlan | None = None  # the [faults] table
    verdicts: tuple = ()  # ((mode, verdict), ...): [expect] verdicts
    replay: ReplayCase | None = None  # a [replay] case: one kept state, no cells
    hosts: tuple = ()  # the [hosts] table's uris: libvirt hosts the states are checked on
    kernels: tuple = ("host",)  # [matrix] kernels: host, debian:VERSION
    per_kernel: tuple = ()  # ((kernel name, {"unsafe", "safe", "verdicts"}), ...): [expect.kernels]

    def expected_on(self, kernel: str) -> "Case":
        """The case as held on the kernel named `kernel`: its own [expect.kernels] table, if any."""
        own = dict(self.per_kernel).get(kernel)
        return replace(self, **own) if own is not None else self


class CaseError(UsageError):
    pass


def _field(setting: Setting):
    """The case file's field for a settings row: its kind's type, checked by the kind; a
    list where the CLI takes a comma-separated list."""
    value = Annotated[setting.kind.annotation, AfterValidator(setting.kind.check)]
    if setting.many:
        unique = AfterValidator(lambda values: once_each(values, meaning(setting.key)))
        value = Annotated[list[value], Field(min_length=1), unique]
    if setting.case_default is None:
        return (value, ...)
    default = list(setting.case_default) if isinstance(setting.case_default, tuple) else setting.case_default
    return (value, default)


def _section(name: str, settings=SETTINGS):
    rows = [s for s in settings if s.case and s.case.startswith(name + ".")]
    return create_model(f"{name.title()}Section", __config__=STRICT,
                        **{s.case.partition(".")[2]: _field(s) for s in rows})


class HostsSection(BaseModel):
    model_config = STRICT
    uris: list[str] = Field(min_length=1)

    @field_validator("uris")
    @classmethod
    def _checked(cls, uris: list[str]) -> list[str]:
        from plugpull.guest.backends import checked_hosts
        try:
            return checked_hosts(uris, "uris")
        except UsageError as e:
            raise ValueError(str(e).removeprefix("bad uris ")) from None


class KernelExpectSection(BaseModel):
    """[expect.kernels."debian:5.10"]: what one kernel of [matrix] kernels must show instead."""
    model_config = STRICT
    unsafe: list[str] = []
    safe: list[str] = []
    verdicts: dict[str, str] = {}


class ExpectSection(BaseModel):
    model_config = STRICT
    unsafe: list[str] = []
    safe: list[str] = []
    faults: list[FaultExpectation] = []
    verdicts: dict[str, str] = {}  # mode -> a verdict some state of that mode must have
    kernels: dict[str, KernelExpectSection] = {}  # a kernel's name -> its own table


MatrixSection = _section("matrix")
CrashSection = _section("crash")
FaultsSection = _section("faults", FAULT_SETTINGS)
CaseFile = create_model(
    "CaseFile", __config__=STRICT, title=(str, ...), source=(str, ""), summary=(str, ""),
    matrix=(MatrixSection | None, None), faults=(FaultsSection | None, None), replay=(ReplaySection | None, None),
    workload=(dict[str, dict[str, Any]], {}),
    crash=(CrashSection, CrashSection()), expect=(ExpectSection, ExpectSection()),
    seed=(SeedSection | None, None), hosts=(HostsSection | None, None))


def _where(loc: tuple) -> str:
    """("matrix", "modes", 1) -> "[matrix] modes[1]"; ("colour",) -> "colour"."""
    head, *rest = loc
    if not rest:
        return str(head)
    where = f"[{head}] {rest[0]}" if head != "workload" else f"[workload.{rest[0]}]"
    return where + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in rest[1:]
                           if head != "workload")


def _first_error(path: Path, error: ValidationError) -> CaseError:
    e = error.errors()[0]
    message = "unknown field" if e["type"] == "extra_forbidden" else (
        "required field is missing" if e["type"] == "missing" else e["msg"].removeprefix("Value error, "))
    where = _where(e["loc"])
    message = as_case_fields(message)  # a check shared with the CLI says its flag: the field here
    return CaseError(f"{path}: {where}: {message.removeprefix(where).lstrip(': ')}")


def as_case_fields(message: str) -> str:
    """A message of the CLI's checks said in a case file's words: `--lose-disk` is
    `[crash] lose_disk`, `--mode` is `[matrix] modes`."""
    for setting in SETTINGS:
        if setting.case:
            section, field = setting.case.split(".")
            message = re.sub(rf"{re.escape(setting.flag)}\b(?!-)", f"[{section}] {field}", message)
    return message[4:] if message.startswith("bad [") else message


def scaled(params: dict, factor: float) -> dict:
    """Shrink a workload's size knobs (files, count, ...) by `factor`, never below 1."""
    return {k: max(1, round(v * factor)) if k in SCALABLE and isinstance(v, int) else v
            for k, v in params.items()}


def _read(path: Path):
    check_input(path, "", directory_ok=True)
    if path.is_dir():
        raise CaseError(f"{path}: a directory, not a case file")
    try:
        data = tomllib.loads(read_regular_text(path, most=TEXT_MAX))
    except FileNotFoundError:
        raise CaseError(f"{path}: no such case file") from None
    except UnicodeDecodeError:
        raise CaseError(f"{path}: not a text file (a case file is TOML)") from None
    except OSError as e:
        raise CaseError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise CaseError(f"{path}: not valid TOML: {e}") from None
    try:
        doc = CaseFile.model_validate(data)
    except ValidationError as e:
        raise _first_error(path, e) from None
    if doc.replay is not None and (doc.matrix is not None or doc.faults is not None):
        raise CaseError(f"{path}: [replay]: a case rechecks a kept record or runs a [matrix] or [faults], not both")
    if doc.matrix is None and doc.faults is None and doc.replay is None:
        raise CaseError(f"{path}: matrix: required field is missing (a case has [matrix], [faults] or both, "
                        "or [replay])")
    return doc


def _workload_params(path: Path, doc, scale: float) -> dict:
    params = {}
    for name, table in doc.workload.items():
        if name not in _names(doc.matrix, "workloads") + _names(doc.faults, "workloads"):
            raise CaseError(f"{path}: [workload.{name}]: not one of [matrix] or [faults] workloads")
        try:
            workload(name, **table)
        except UsageError as e:
            raise CaseError(f"{path}: [workload.{name}]: {e}") from None
        params[name] = scaled(table, scale)
    return params


def _names(section, field: str) -> list:
    return list(getattr(section, field)) if section is not None else []


def _expected(path: Path, table, which: str, modes: list, where: str = "[expect]") -> tuple:
    for i, mode in enumerate(getattr(table, which)):
        if mode not in modes:
            raise CaseError(f"{path}: {where} {which}[{i}]: unknown value {mode!r} (known: {', '.join(modes)})")
        if mode in getattr(table, which)[:i]:
            raise CaseError(f"{path}: {where} {which}[{i}]: {mode} is given twice")
    return tuple(getattr(table, which))


def _expected_verdicts(path: Path, table, modes: list, where: str = "[expect]") -> tuple:
    for mode, verdict in table.verdicts.items():
        if mode not in modes:
            raise CaseError(f"{path}: {where} verdicts.{mode}: unknown mode {mode!r} (known: {', '.join(modes)})")
        if verdict not in EXPECTABLE:
            never = " (a harness failure, never a verdict)" if verdict == Verdict.INFRA_ERROR else ""
            raise CaseError(f"{path}: {where} verdicts.{mode}: unknown verdict {shown(verdict)}{never} "
                            f"(known: {', '.join(EXPECTABLE)})")
    return tuple(table.verdicts.items())


def _table(path: Path, table, modes: list, where: str = "[expect]") -> dict:
    both = [m for m in table.unsafe if m in table.safe]
    if both:
        raise CaseError(f"{path}: {where} safe: {both[0]} is in unsafe too; both can never hold")
    return {"unsafe": _expected(path, table, "unsafe", modes, where), "safe": _expected(path, table, "safe", modes, where),
            "verdicts": _expected_verdicts(path, table, modes, where)}


def _expectations(path: Path, doc, modes: list, kernels: tuple = ()) -> dict:
    """The [expect] table, and each kernel's own ([expect.kernels."NAME"]), checked."""
    per_kernel = []
    for name, table in doc.expect.kernels.items():
        where = f'[expect.kernels."{name}"]'
        if kernels is None:  # a [replay] case: its kernels come from --kernel
            try:
                kernel_name(name)
            except UsageError as e:
                raise CaseError(f"{path}: {where}: {e}") from None
        elif name not in kernels:
            raise CaseError(f"{path}: {where}: {name!r} is not one of [matrix] kernels ({', '.join(kernels) or 'none'})")
        per_kernel.append((name, _table(path, table, modes, where)))
    return {**_table(path, doc.expect, modes), "per_kernel": tuple(per_kernel)}


def _replay_case(path: Path, doc) -> Case:
    """A [replay] case: the kept record names everything a [matrix] case would set."""
    unused = [f"[{name}]" for name in ("workload", "crash", "seed") if name in doc.model_fields_set]
    if unused or doc.expect.faults:
        raise CaseError(f"{path}: {unused[0] if unused else '[expect] faults'}: not used by a [replay] case "
                        "(its record says how it was made)")
    try:
        kept = replay_case(path, doc.replay)
    except UsageError as e:
        raise CaseError(str(e)) from None
    return Case(path, doc.title, doc.source, doc.summary.strip(), (), replay=kept,
                **_expectations(path, doc, [kept.mode], None))


def _fault_plan(path: Path, doc, params: dict) -> FaultPlan | None:
    if doc.faults is None:
        if doc.expect.faults:
            raise CaseError(f"{path}: [expect] faults: the case has no [faults] table")
        return None
    if where := check_expectations(doc.faults, doc.expect.faults):
        raise CaseError(f"{path}: [expect] {where}")
    if "cuts" in doc.faults.model_fields_set and not doc.faults.power_loss:
        raise CaseError(f"{path}: [faults] cuts: is for power_loss, and there is none: no cut would be made")
    return FaultPlan(fault_cases(doc.faults, params), doc.faults.runs, tuple(doc.expect.faults))


def load_case(path: Path, scale: float = 1.0) -> Case:
    doc = _read(path)
    if doc.replay is not None:
        return _replay_case(path, doc)
    params = _workload_params(path, doc, scale)
    faults = _fault_plan(path, doc, params)
    if doc.matrix is None:
        if doc.seed is not None:
            raise CaseError(f"{path}: [seed]: the seed's figures are a matrix's: the case has no [matrix]")
        return Case(path, doc.title, doc.source, doc.summary.strip(), (), faults=faults,
                    **_expectations(path, doc, []))
    crash = doc.crash
    base = CrashSpec(models=tuple(crash.models), states=crash.states, seed=crash.seed, trigger=crash.trigger,
                     bus=doc.matrix.bus, disk_mib=doc.matrix.disk_mib, check_script=crash.check_script,
                     budget=crash.budget, stack=crash.stack, lose_disk=crash.lose_disk)
    seed = seed_table(path, doc.seed, doc.matrix.workloads, doc.matrix.modes)
    kernels = tuple(dict.fromkeys(doc.matrix.kernels))
    todo = cells(base, doc.matrix.fs, doc.matrix.modes, doc.matrix.workloads, params,
                 profile=doc.matrix.profile, seed=seed)
    try:
        todo = with_user_scripts(todo, path.parent)
        for cell in todo:
            cell.validate()
    except UsageError as e:
        raise CaseError(f"{path}: {as_case_fields(str(e))}") from None
    return Case(path, doc.title, doc.source, doc.summary.strip(), tuple(todo), seed=seed, faults=faults,
                hosts=tuple(doc.hosts.uris) if doc.hosts else (), kernels=kernels,
                **_expectations(path, doc, doc.matrix.modes, kernels))


def expectation_failures(case: Case, results: list[CellResult]) -> list[str]:
    """What the case's [expect] table says and the results do not show."""
    failures = []
    for mode_name in case.unsafe:
        crash = [r.crash for r in results if r.mode == mode_name and r.crash]
        if not any((c.unsafe or 0) > 0 for c in crash):
            failures.append(f"{mode_name}: expected states that are not clean, saw none")
    for mode_name in case.safe:
        crash = [r.crash for r in results if r.mode == mode_name and r.crash]
        bad = sum(c.unsafe or 0 for c in crash)
        if not crash or bad:
            failures.append(f"{mode_name}: expected only clean states, saw {bad} that are not"
                            if crash else f"{mode_name}: no crash states were checked")
    for mode_name, verdict in case.verdicts:
        crash = [r.crash for r in results if r.mode == mode_name and r.crash]
        if not any(c.count(verdict) for c in crash):
            failures.append(f"{mode_name}: expected a state judged {verdict}, saw none")
    return failures


def replay_failures(case: Case, verdict: str) -> list[str]:
    """What a [replay] case's [expect] table says and its one rechecked state does not show."""
    mode = case.replay.mode
    failures = []
    if mode in case.unsafe and verdict == "clean":
        failures.append(f"{mode}: expected a state that is not clean, it is clean")
    if mode in case.safe and verdict != "clean":
        failures.append(f"{mode}: expected a clean state, it is {verdict}")
    failures += [f"{mode}: expected {want}, it is {verdict}" for m, want in case.verdicts if verdict != want]
    return failures
