"""The shape of every result plugpull writes and reads: one schema, as frozen dataclasses.

Three kinds of documents carry `"schema": SCHEMA_VERSION`: the lines of a matrix results file,
one `CellResult` each (`append_line`, `read_cells`), the fault runs among them, one
`FaultResult` each (`read_faults`), and the `crash --json` `CrashRun`.
Version 1, written before results had a version, has the same shapes without the key and
still loads; a newer version is refused with a `SchemaError` naming it. Reading is lenient
about values (a number that is not one becomes None), strict about what names a cell.
"""

from plugpull.results.diskio import DiskIO, StatError
from plugpull.results.faults import FAULT_VERDICTS, UNSAFE_FAULT_VERDICTS, FaultResult, read_faults
from plugpull.results.lines import append_line, read_cells
from plugpull.results.schema import (
    CellResult,
    CrashRun,
    CrashSummary,
    CrashTiming,
    Env,
    INFRA,
    MIB,
    Phase,
    SCHEMA_VERSION,
    SchemaError,
    StateResult,
    Throughput,
    UNSAFE_VERDICTS,
    VERDICTS,
    check_schema,
    param_text,
)

__all__ = [
    "CellResult", "CrashRun", "CrashSummary", "CrashTiming", "DiskIO", "Env", "StatError", "INFRA", "MIB", "Phase",
    "SCHEMA_VERSION", "SchemaError", "StateResult", "Throughput", "UNSAFE_VERDICTS", "VERDICTS",
    "check_schema", "param_text", "append_line", "read_cells",
    "FAULT_VERDICTS", "UNSAFE_FAULT_VERDICTS", "FaultResult", "read_faults"
]
