"""Case files (suites/cases/*.toml): a seed's experiment, or a reported corruption case, as
data. `load_case` validates every field and names the one that is wrong."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from plugpull.guest.config import Bus
from plugpull.errors import UsageError
from plugpull.lab.fs import FILESYSTEMS, MODES
from plugpull.lab.matrix import DEFAULT_MODEL, cells
from plugpull.powerloss.models import parse_model
from plugpull.lab.profiles import DEFAULT as DEFAULT_PROFILE, load_profiles
from plugpull.lab.record import Trigger
from plugpull.lab.workloads import WORKLOADS, workload
from plugpull.results import CellResult

SCALABLE = ("files", "count", "transactions", "mib")  # bonnie++ -n stays: fewer than 16k files are too fast to time
TOP = {"title", "source", "summary", "matrix", "workload", "crash", "expect"}
MATRIX = {"fs", "modes", "workloads", "bus", "disk_mib", "profile"}
CRASH = {"states", "models", "seed", "trigger"}
EXPECT = {"unsafe", "safe"}


@dataclass(frozen=True)
class Case:
    path: Path
    title: str
    source: str
    summary: str
    cells: tuple
    unsafe: tuple = ()
    safe: tuple = ()


class CaseError(UsageError):
    pass


def _check_keys(where: str, table: dict, allowed: set, path: Path) -> None:
    for key in table:
        if key not in allowed:
            raise CaseError(f"{path}: {where}{key}: unknown field (known: {', '.join(sorted(allowed))})")


def _list_of(path: Path, where: str, value, known) -> list:
    if not isinstance(value, list) or not value:
        raise CaseError(f"{path}: {where}: expected a non-empty list")
    for i, item in enumerate(value):
        if item not in known:
            raise CaseError(f"{path}: {where}[{i}]: unknown value {item!r} (known: {', '.join(known)})")
    return value


def _int(path: Path, where: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CaseError(f"{path}: {where}: expected a whole number >= {minimum}, got {value!r}")
    return value


def scaled(params: dict, factor: float) -> dict:
    """Shrink a workload's size knobs (files, count, ...) by `factor`, never below 1."""
    return {k: max(1, round(v * factor)) if k in SCALABLE and isinstance(v, int) else v
            for k, v in params.items()}


def load_case(path: Path, scale: float = 1.0) -> Case:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise CaseError(f"{path}: no such case file") from None
    except tomllib.TOMLDecodeError as e:
        raise CaseError(f"{path}: not valid TOML: {e}") from None
    _check_keys("", data, TOP, path)
    for key in ("title", "matrix"):
        if key not in data:
            raise CaseError(f"{path}: {key}: required field is missing")
    m = data["matrix"]
    _check_keys("[matrix] ", m, MATRIX, path)
    for key in ("fs", "modes", "workloads"):
        if key not in m:
            raise CaseError(f"{path}: [matrix] {key}: required field is missing")
    fss = _list_of(path, "[matrix] fs", m["fs"], list(FILESYSTEMS))
    modes = _list_of(path, "[matrix] modes", m["modes"], list(MODES))
    names = _list_of(path, "[matrix] workloads", m["workloads"], list(WORKLOADS))
    try:
        bus = Bus(m.get("bus", "ahci"))
    except ValueError:
        raise CaseError(f"{path}: [matrix] bus: expected ahci or ide, got {m.get('bus')!r}") from None
    if bus is Bus.SCSI:
        raise CaseError(f"{path}: [matrix] bus: expected ahci or ide, got 'scsi'")
    disk_mib = _int(path, "[matrix] disk_mib", m.get("disk_mib", 512), 64)
    profiles = load_profiles()
    profile_name = m.get("profile", DEFAULT_PROFILE)
    if profile_name not in profiles:
        raise CaseError(f"{path}: [matrix] profile: unknown disk profile {profile_name!r} "
                        f"(known: {', '.join(profiles)})")

    params = {}
    for name, table in data.get("workload", {}).items():
        if name not in names:
            raise CaseError(f"{path}: [workload.{name}]: not one of [matrix] workloads")
        try:
            workload(name, **table)
        except UsageError as e:
            raise CaseError(f"{path}: [workload.{name}]: {e}") from None
        params[name] = scaled(table, scale)

    crash = data.get("crash", {})
    _check_keys("[crash] ", crash, CRASH, path)
    states = _int(path, "[crash] states", crash.get("states", 20))
    models = crash.get("models", [DEFAULT_MODEL])
    if not isinstance(models, list) or not models:
        raise CaseError(f"{path}: [crash] models: expected a non-empty list")
    for i, model in enumerate(models):
        try:
            parse_model(model)
        except ValueError as e:
            raise CaseError(f"{path}: [crash] models[{i}]: {e}") from None
    seed = _int(path, "[crash] seed", crash.get("seed", 1), 0)
    trigger = crash.get("trigger", "end")
    try:
        Trigger.parse(trigger)
    except UsageError as e:
        raise CaseError(f"{path}: [crash] trigger: {e}") from None

    expect = data.get("expect", {})
    _check_keys("[expect] ", expect, EXPECT, path)
    unsafe = _list_of(path, "[expect] unsafe", expect["unsafe"], modes) if "unsafe" in expect else []
    safe = _list_of(path, "[expect] safe", expect["safe"], modes) if "safe" in expect else []

    todo = cells(fss, modes, names, params, bus=bus, disk_mib=disk_mib, states=states,
                 models=tuple(models), seed=seed, trigger=trigger, profile=profile_name)
    return Case(path, data["title"], data.get("source", ""), data.get("summary", "").strip(),
                tuple(todo), tuple(unsafe), tuple(safe))


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
