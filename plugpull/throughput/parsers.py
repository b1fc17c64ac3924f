"""Parsers for what the throughput benchmarks print: pp-smallfiles (and the seed 003 text it
imitates), fio's JSON output and bonnie++'s CSV line. Each returns a list of `Phase`.

A rate that a benchmark printed is kept as printed (`ops_per_s`, `mb_per_s`) rather than
recomputed: the other numbers are rounded, and the seed texts even carry rates that do not
match their own seconds (seed 003's third run: 250000 files in 15.157 s, "6494.04 op/s").
"""

import csv
import json
import re

from plugpull.results import MIB, Phase


# pp-smallfiles and seed 003

SMALLFILES_PHASES = ("sequential create", "random open", "random stat", "random read", "sequential delete")
_SMALLFILES_COUNT = re.compile(r"^\.\.\. testing (\d+) files \.\.\.")
_SMALLFILES_LINE = re.compile(r"^#\d+ +(?P<name>[a-z][a-z ]*?) *: *(?P<result>.*)$")
_SMALLFILES_RESULT = re.compile(r"(?P<seconds>\d+(?:\.\d*)?) seconds \((?P<rate>\d+(?:\.\d*)?) op/s\)")


def parse_smallfiles(text: str) -> list[Phase]:
    """Phases of pp-smallfiles output, or of the seed's own text, in the order they appear.

    A text holding several runs (as seed 003 does) gives each run's phases in turn. `ops` is
    the file count of the last `... testing N files ...` line before the phase (None before
    any). A phase line without a result, like the seed's `#5 sequential delete : too long, ^C
    after a few minutes!`, is kept as a missing result: `seconds` and the rates are None, so a
    table can show that the phase ran out of patience rather than silently dropping it.
    """
    phases, count = [], None
    for line in text.splitlines():
        line = line.strip()
        if m := _SMALLFILES_COUNT.match(line):
            count = int(m.group(1))
            continue
        m = _SMALLFILES_LINE.match(line)
        if not m or m.group("name") not in SMALLFILES_PHASES:
            continue
        result = _SMALLFILES_RESULT.match(m.group("result"))
        if result:
            phases.append(Phase(m.group("name"), float(result.group("seconds")), ops=count,
                                ops_per_s=float(result.group("rate"))))
        else:
            phases.append(Phase(m.group("name"), None))
    if not phases:
        raise ValueError("no pp-smallfiles phase line (like '#1 sequential create : "
                         "1.234 seconds (810.37 op/s).') in the text")
    return phases


# fio --output-format=json

FIO_DIRECTIONS = ("read", "write", "trim")


def parse_fio(json_text: str) -> list[Phase]:
    """One phase per fio job, named after the job.

    `seconds` is the job's runtime (`job_runtime`, in ms); `ops` and `bytes` add up the
    job's read, write and trim I/Os (fsyncs are not counted); `ops_per_s` and `mb_per_s` add
    up fio's own per-direction `iops` and `bw_bytes`, which fio computes over each
    direction's runtime, so they may differ slightly from ops / seconds. Text that fio
    printed around the JSON (warnings) is ignored.
    """
    data = _fio_document(json_text)
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list) or not jobs:
        raise ValueError("not fio JSON output: no 'jobs' list")
    try:
        return [_fio_phase(job) for job in jobs]
    except KeyError as e:
        raise ValueError(f"not fio JSON output: a job has no {e} field") from None
    except (TypeError, ValueError) as e:
        raise ValueError(f"not fio JSON output: a job has a field of the wrong type ({e})") from None


def _fio_document(text: str):
    """The JSON object in fio's output, which warnings may precede or follow."""
    decoder = json.JSONDecoder()
    for start in re.finditer(r"^[ \t]*\{", text, re.MULTILINE):
        try:
            return decoder.raw_decode(text, start.end() - 1)[0]
        except json.JSONDecodeError:
            continue
    raise ValueError("not fio JSON output: no JSON object in the text")


def _fio_phase(job: dict) -> Phase:
    directions = [job[d] for d in FIO_DIRECTIONS if d in job]
    if not directions:
        raise KeyError("read/write/trim")
    runtime_ms = job["job_runtime"] if "job_runtime" in job else max(d["runtime"] for d in directions)
    return Phase(
        name=str(job["jobname"]),
        seconds=runtime_ms / 1000,
        ops=sum(int(d["total_ios"]) for d in directions),
        bytes=sum(int(d["io_bytes"]) for d in directions),
        ops_per_s=sum(float(d["iops"]) for d in directions),
        mb_per_s=sum(int(d["bw_bytes"]) for d in directions) / MIB,
    )


# bonnie++ CSV (format 1.96 and later: bonnie++ 1.96 to 2.00a)

BONNIE_FORMATS = ("1.96", "1.97", "1.98")
# (column of the result, phase name, unit): each result column is followed by its %CPU.
BONNIE_COLUMNS = (
    (9, "sequential output per char", "K/s"),
    (11, "sequential output block", "K/s"),
    (13, "rewrite", "K/s"),
    (15, "sequential input per char", "K/s"),
    (17, "sequential input block", "K/s"),
    (19, "random seeks", "/s"),
    (26, "sequential create", "/s"),
    (28, "sequential stat", "/s"),
    (30, "sequential delete", "/s"),
    (32, "random create", "/s"),
    (34, "random stat", "/s"),
    (36, "random delete", "/s"),
)
BONNIE_MIN_FIELDS = 38
TOO_FAST = "+++++"


def parse_bonnie(csv_text: str) -> list[Phase]:
    """Phases of bonnie++'s CSV lines (what `bonnie++ -q` prints on stdout), in column order.

    Names follow the seeds' tables. Block results (K/sec) become `mb_per_s`, the seeks and
    the file tests (files/sec) `ops_per_s`; bonnie++ gives no durations, so `seconds` is None.
    bonnie++ calls the second file test of each group "Read", but without a file size
    (`-n N`, as the seeds ran it) it only stats the files: hence "sequential stat" and
    "random stat". An empty field is a test that did not run (`-s 0`, `-n 0`, `-f`): no
    phase. `+++++` is a test that ran but finished too fast for bonnie++ to time: a phase
    whose rates are None (`measured` is False). Header lines (`name,...`) are skipped; a text
    of several lines (`-x N`) gives each line's phases in turn.
    """
    phases, rows = [], 0
    for row in csv.reader(csv_text.splitlines()):
        if not row or not "".join(row).strip() or row[0] in ("name", "format_version"):
            continue
        _check_bonnie_row(row)
        rows += 1
        for column, name, unit in BONNIE_COLUMNS:
            value = row[column].strip()
            if not value:
                continue
            rate = None if value == TOO_FAST else _bonnie_number(value, column)
            if unit == "K/s":
                phases.append(Phase(name, None, mb_per_s=None if rate is None else rate / 1024))
            else:
                phases.append(Phase(name, None, ops_per_s=rate))
    if not rows:
        raise ValueError("not bonnie++ CSV: no result line in the text")
    return phases


def _check_bonnie_row(row: list[str]) -> None:
    if row[0] not in BONNIE_FORMATS:
        raise ValueError(f"not bonnie++ CSV of format {'/'.join(BONNIE_FORMATS)}: the line starts "
                         f"with {row[0][:40]!r} (bonnie++ 1.03's CSV, without a format column, "
                         "is not supported)")
    if len(row) < BONNIE_MIN_FIELDS:
        raise ValueError(f"bonnie++ CSV line has {len(row)} fields, expected at least {BONNIE_MIN_FIELDS}")


def _bonnie_number(value: str, column: int) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"bonnie++ CSV column {column + 1} is {value!r}, not a number or "
                         f"{TOO_FAST}") from None
