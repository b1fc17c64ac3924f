"""Case files (suites/cases/*.toml): a seed's experiment, or a reported corruption case, as
data. `load_case` validates every field and names the one that is wrong."""

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from plugpull.errors import UsageError
from plugpull.lab.matrix import cells, with_user_scripts
from plugpull.lab.seeds import SeedSection, seed_table
from plugpull.lab.settings import SETTINGS, Setting
from plugpull.lab.spec import CrashSpec
from plugpull.lab.workloads import workload
from plugpull.results import CellResult

SCALABLE = ("files", "count", "transactions", "mib")  # bonnie++ -n stays: fewer than 16k files are too fast to time
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
    hosts: tuple = ()  # the [hosts] table's uris: libvirt hosts the states are checked on


class CaseError(UsageError):
    pass


def _field(setting: Setting):
    """The case file's field for a settings row: its kind's type, checked by the kind; a
    list where the CLI takes a comma-separated list."""
    value = Annotated[setting.kind.annotation, AfterValidator(setting.kind.check)]
    if setting.many:
        value = Annotated[list[value], Field(min_length=1)]
    if setting.case_default is None:
        return (value, ...)
    default = list(setting.case_default) if isinstance(setting.case_default, tuple) else setting.case_default
    return (value, default)


def _section(name: str):
    rows = [s for s in SETTINGS if s.case and s.case.startswith(name + ".")]
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
            raise ValueError(str(e).removeprefix("bad --connect ")) from None


class ExpectSection(BaseModel):
    model_config = STRICT
    unsafe: list[str] = []
    safe: list[str] = []


MatrixSection = _section("matrix")
CrashSection = _section("crash")
CaseFile = create_model(
    "CaseFile", __config__=STRICT, title=(str, ...), source=(str, ""), summary=(str, ""),
    matrix=(MatrixSection, ...), workload=(dict[str, dict[str, Any]], {}),
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
    return CaseError(f"{path}: {_where(e['loc'])}: {message}")


def scaled(params: dict, factor: float) -> dict:
    """Shrink a workload's size knobs (files, count, ...) by `factor`, never below 1."""
    return {k: max(1, round(v * factor)) if k in SCALABLE and isinstance(v, int) else v
            for k, v in params.items()}


def _read(path: Path):
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise CaseError(f"{path}: no such case file") from None
    except IsADirectoryError:
        raise CaseError(f"{path}: a directory, not a case file") from None
    except UnicodeDecodeError:
        raise CaseError(f"{path}: not a text file (a case file is TOML)") from None
    except OSError as e:
        raise CaseError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise CaseError(f"{path}: not valid TOML: {e}") from None
    try:
        return CaseFile.model_validate(data)
    except ValidationError as e:
        raise _first_error(path, e) from None


def _workload_params(path: Path, doc, scale: float) -> dict:
    params = {}
    for name, table in doc.workload.items():
        if name not in doc.matrix.workloads:
            raise CaseError(f"{path}: [workload.{name}]: not one of [matrix] workloads")
        try:
            workload(name, **table)
        except UsageError as e:
            raise CaseError(f"{path}: [workload.{name}]: {e}") from None
        params[name] = scaled(table, scale)
    return params


def _expected(path: Path, doc, which: str) -> tuple:
    modes = getattr(doc.expect, which)
    for i, mode in enumerate(modes):
        if mode not in doc.matrix.modes:
            raise CaseError(f"{path}: [expect] {which}[{i}]: unknown value {mode!r} "
                            f"(known: {', '.join(doc.matrix.modes)})")
    return tuple(modes)


def load_case(path: Path, scale: float = 1.0) -> Case:
    doc = _read(path)
    crash = doc.crash
    base = CrashSpec(models=tuple(crash.models), states=crash.states, seed=crash.seed, trigger=crash.trigger,
                     bus=doc.matrix.bus, disk_mib=doc.matrix.disk_mib, check_script=crash.check_script,
                     budget=crash.budget, stack=crash.stack, lose_disk=crash.lose_disk)
    seed = seed_table(path, doc.seed, doc.matrix.workloads, doc.matrix.modes)
    todo = cells(base, doc.matrix.fs, doc.matrix.modes, doc.matrix.workloads, _workload_params(path, doc, scale),
                 profile=doc.matrix.profile, seed=seed)
    try:
        todo = with_user_scripts(todo, path.parent)
    except UsageError as e:
        raise CaseError(f"{path}: {e}") from None
    return Case(path, doc.title, doc.source, doc.summary.strip(), tuple(todo),
                _expected(path, doc, "unsafe"), _expected(path, doc, "safe"), seed,
                tuple(doc.hosts.uris) if doc.hosts else ())


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
    return failures
