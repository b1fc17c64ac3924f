"""Fault runs as results: one `FaultResult` per run of `plugpull faults` (or of a case
file's [faults] table), a line of kind "fault" in a results file beside the matrix's cells.

Before schema 5, `faults --json` wrote {"kernel": ..., "runs": [...]} without a version, each
run with the same keys as a fault line today; `read_faults` still reads such a file.
"""

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugpull.results.fields import _count, _lenient, _number, _of, _pairs, _settle, param_text
from plugpull.results.schema import INFRA, SCHEMA_VERSION, check_schema

FAULT_VERDICTS = ("clean", "error-reported", "silent-loss", "fs-shutdown", "fs-corrupt", "unmountable",
                  "kernel-crash", INFRA)
UNSAFE_FAULT_VERDICTS = ("silent-loss", "fs-corrupt", "unmountable", "kernel-crash")
ERRNO_SYSCALLS = ("write", "fsync", "close")  # the errno columns of the fault tables


def fault_key(fs: str, fault: str, workload: str, params, run: int) -> str:
    """What names a run: a run again under the same key replaces the earlier line."""
    shown = "/".join(f"{k}={param_text(v)}" for k, v in _pairs(params or {}))
    return f"{fs}/{fault}/{workload}" + (f"/{shown}" if shown else "") + f"#{run}"


@dataclass(frozen=True)
class FaultResult:
    """One fault run: the verdict, what the application was told (`told`: acks, errors as
    [op, syscall, errno name], wrong reads, the exit code), the dm-flakey evidence (the table
    and status while the fault was on, when it was switched) and the fault spec."""

    key: str
    fs: str
    fault: str  # the spec as `--fault` takes it
    workload: str
    verdict: str
    reason: str = ""
    params: tuple[tuple[str, Any], ...] = ()
    spec: dict | None = None  # the parsed spec: kind, trigger, window, seed, up, down
    run: int = 0  # which run of its cell
    told: dict | None = None
    table: str = ""  # `dmsetup table` while the fault was on
    status: str = ""  # `dmsetup status` then
    switched: tuple = ()  # (seconds since the start, "on" / "off")
    shutdown: str = ""  # "shutdown", "read-only" or ""
    version_after: int | None = None  # fsync-retry: its file's version after the remount
    corruption: str = ""  # "detected", "returned wrong data" or ""
    corruption_evidence: str = ""
    power_loss: dict | None = None  # model -> verdict -> cuts, for "fault, then power loss"
    seconds: float | None = None
    kernel: str | None = None
    started: str | None = None  # UTC, ISO 8601

    def __post_init__(self):
        _settle(self, params=_pairs(self.params), spec=self.spec, told=self.told or {},
                switched=tuple(tuple(s) for s in self.switched), power_loss=self.power_loss or {})

    @property
    def errors(self) -> list[tuple]:
        """(op, syscall, errno name) of every failed system call the application saw."""
        return [tuple(e) for e in self.told.get("errors") or [] if isinstance(e, (list, tuple)) and len(e) == 3]

    def errnos(self, syscall: str) -> Counter:
        return Counter(str(name) for _, call, name in self.errors if call == syscall)

    @property
    def unsafe(self) -> bool:
        return self.verdict in UNSAFE_FAULT_VERDICTS

    def to_json(self) -> dict:
        return {"schema": SCHEMA_VERSION, "kind": "fault", "key": self.key, "fs": self.fs, "fault": self.fault,
                "workload": self.workload, "params": dict(self.params), "spec": self.spec, "run": self.run,
                "verdict": self.verdict, "reason": self.reason, "told": self.told,
                "errnos": {s: dict(self.errnos(s)) for s in ERRNO_SYSCALLS}, "table": self.table,
                "status": self.status, "switched": [list(s) for s in self.switched], "shutdown": self.shutdown,
                "version_after": self.version_after, "corruption": self.corruption,
                "corruption_evidence": self.corruption_evidence, "power_loss": self.power_loss,
                "seconds": self.seconds, "kernel": self.kernel, "started": self.started}

    @classmethod
    def from_json(cls, doc: dict, run: int = 0) -> "FaultResult":
        """ValueError if the run names no fs, fault, workload or verdict; SchemaError if it was
        written in a newer schema. `run`: its number when the document has none (schema 1)."""
        check_schema(doc)
        names = {f: doc.get(f) for f in ("fs", "fault", "workload", "verdict")}
        absent = [f for f, v in names.items() if not isinstance(v, str) or not v]
        if absent:
            raise ValueError(f"a fault run without {', '.join(absent)}")
        params = _of(dict, doc.get("params")) or {}
        number = _count(doc.get("run"))
        number = run if number is None else number
        key = doc.get("key") if isinstance(doc.get("key"), str) else fault_key(
            names["fs"], names["fault"], names["workload"], params, number)
        text = {f: str(doc.get(f) or "") for f in ("reason", "table", "status", "shutdown", "corruption",
                                                     "corruption_evidence")}
        return _lenient(cls, doc, key=key, **names, **text, params=_pairs(params), run=number,
                        spec=_of(dict, doc.get("spec")), told=_of(dict, doc.get("told")),
                        switched=tuple(s for s in _of(list, doc.get("switched")) or [] if isinstance(s, (list, tuple))),
                        power_loss=_of(dict, doc.get("power_loss")), seconds=_number(doc.get("seconds")))


def _faults_of_doc(doc: dict) -> list[FaultResult]:
    """A fault line, or a `faults --json` document (its runs, with its kernel; before schema 5
    it had no schema or kind)."""
    if doc.get("kind") == "fault":
        return [FaultResult.from_json(doc)]
    if doc.get("kind", "faults") == "faults" and isinstance(doc.get("runs"), list):
        check_schema(doc)
        kernel = doc.get("kernel")
        counted: Counter = Counter()
        found = []
        for run in doc["runs"]:
            if isinstance(run, dict):
                cell = (run.get("fs"), run.get("fault"), run.get("workload"))
                found.append(FaultResult.from_json({"kernel": kernel, **run}, run=counted[cell]))
                counted[cell] += 1
        return found
    return []


def read_faults(path: Path) -> tuple[list[FaultResult], list[str]]:
    """The fault runs of a results file (none if there is none) and a warning per line that
    was skipped; the last line of a key wins, lines of other kinds are passed over quietly.
    A whole-file JSON document (`faults --json`, indented) is read as one."""
    path = Path(path)
    if not path.is_file():
        return [], []
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        docs = [(0, json.loads(text))]
    except json.JSONDecodeError:
        docs = [(i, line) for i, line in enumerate(text.split("\n")) if line.strip()]
    runs: dict[str, FaultResult] = {}
    warnings = []
    for i, doc in docs:
        try:
            doc = json.loads(doc) if isinstance(doc, str) else doc
            for run in _faults_of_doc(doc) if isinstance(doc, dict) else []:
                runs[run.key] = run
        except ValueError as e:  # JSONDecodeError and SchemaError are ValueErrors
            warnings.append(f"{path}:{i + 1}: skipped, {e if not isinstance(e, json.JSONDecodeError) else 'not valid JSON'}")
    return list(runs.values()), warnings
