"""The results schema: every type survives JSON, old lines still load, newer ones are refused."""

import json
from dataclasses import replace

import pytest

from plugpull.check.verdict import POWER_CUT_VERDICTS
from plugpull.results import (SCHEMA_VERSION, CellResult, CrashRun, CrashSummary, CrashTiming, Env, Phase,
                              SchemaError, StateResult, Throughput, append_line, read_cells)

PHASE = Phase("extract", 12.5, ops=2000, bytes=20480000)
RATE_ONLY = Phase("sequential create", None, ops_per_s=1321.37)
THROUGHPUT = Throughput(phases=(PHASE, RATE_ONLY), recorder_overhead=1.07, queue_write_cache="write back",
                        accel="tcg", recorded=False, profile={"name": "hdd", "summary": "7200 rpm", "flush_ms": 10,
                                                              "write_through_ms": 8}, real_disk=None)
LOST = [{"ack": 7, "reason": "file missing"}]
STATE = StateResult(fs="xfs", mode="nobarrier", workload="fsync-files", model="reorder", seed=1, cut=120,
                    verdict="data-loss", reason="1 of 30 acknowledged operations lost", acks_required=30,
                    acks_lost=1, fsck_rc=0, lost=LOST, artifact="out/states/reorder-cut120")
EXTLOG_STATE = StateResult("xfs", "extlog", "fsync-files", "reorder", 1, 80, "clean", "30 intact", 30, 0, 0, cuts=(80, 44))
LOG = {"entries": 300, "writes": 280, "flushes": 20, "fua": 0, "discards": 0, "bytes_written": 4 << 20,
       "log_bytes": 5 << 20, "torn_tail": False, "marks": 0}
CRASH = CrashSummary(states=20, models=("cache:32:random",), clean=9, data_loss=7, fs_corrupt=3, unmountable=1,
                     infra_error=0, log=LOG, states_per_minute=41.5, artifacts="results/run-artifacts/x")
TIMING = CrashTiming(record_s=14.2, check_s=30.1, states_per_minute=4.0)
SPEC = {"fs": "xfs", "mode": "nobarrier", "workload": "fsync-files", "params": {"count": 40},
        "models": ("reorder",), "states": 2, "seed": 1, "trigger": "acks:30", "disk_mib": 512, "bus": "ahci",
        "cuts": "", "batch": 16, "workers": 0}
RUN = CrashRun(spec=SPEC, record={"fs": "xfs", "log": LOG, "cut_pairs": [(1, 2), (3, 4)]},
               states=(STATE, EXTLOG_STATE), timing=TIMING)
ENV = Env(accel="tcg", qemu="7.2.22", kernel="6.1.0-56-amd64",
          packages=(("xfsprogs", "6.1.0-1"), ("e2fsprogs", "1.47.0-2")), image="a1b2c3", host="x86_64, 2 cores",
          disk_backing="raw file", disk_profile="hdd: 7200 rpm", bus="ahci")
CELL = CellResult(key="xfs/nobarrier/tree-extract/ab12cd01ef", fs="xfs", mode="nobarrier", workload="tree-extract",
                  params=(("seed", 1), ("files", 2000)),
                  settings={"fs": "xfs", "params": (("files", 2000),), "models": ("cache:32:random",)},
                  env=ENV, started="2026-11-20T23:00:00Z", seconds=41.2, throughput=THROUGHPUT, crash=CRASH)
FAILED = CellResult(key="ext4/barrier/fsync-files/99", fs="ext4", mode="barrier", workload="fsync-files",
                    error="harness failure (not a verdict): guest stopped answering")


def through_json(value):
    return type(value).from_json(json.loads(json.dumps(value.to_json())))


@pytest.mark.parametrize("value", [PHASE, RATE_ONLY, THROUGHPUT, Throughput(), STATE, EXTLOG_STATE, CRASH,
                                   CrashSummary(), TIMING, RUN, ENV, Env(), CELL, FAILED],
                         ids=lambda v: type(v).__name__)
def test_every_result_type_survives_json(value):
    assert through_json(value) == value


def test_documents_carry_the_schema_version_and_their_parts_do_not():
    assert SCHEMA_VERSION == 5
    assert CELL.to_json()["schema"] == SCHEMA_VERSION and RUN.to_json()["schema"] == SCHEMA_VERSION
    assert "schema" not in CRASH.to_json() and "schema" not in THROUGHPUT.to_json()


# A line exactly as plugpull wrote it before results had a schema (version 1): no "schema" key,
# no "error" key when the cell succeeded, params as the workload gave them.
TODAYS_LINE = json.dumps({
    "kind": "cell", "key": "xfs/nobarrier/tree-extract/ab12cd01ef", "fs": "xfs", "mode": "nobarrier",
    "workload": "tree-extract", "params": {"files": 2000, "seed": 1},
    "cell": {"fs": "xfs", "mode": "nobarrier", "workload": "tree-extract", "params": [["files", 2000]],
             "bus": "ahci", "disk_mib": 512, "throughput": True, "crash": True, "states": 20,
             "models": ["cache:32:random"], "seed": 1, "trigger": "end", "overhead": False, "profile": "hdd",
             "real_disk": None},
    "env": {"disk_profile": "hdd: 7200 rpm", "accel": "tcg", "qemu": "7.2.22", "kernel": "6.1.0-56-amd64",
            "packages": {"xfsprogs": "6.1.0-1", "e2fsprogs": "1.47.0-2"}, "image": "a1b2c3",
            "host": "x86_64, 2 cores, 6.1.0", "disk_backing": "raw file", "bus": "ahci"},
    "started": "2026-11-20T23:00:00Z",
    "throughput": {"phases": [{"name": "extract", "seconds": 2.5, "ops": 2000, "bytes": 20480000,
                               "ops_per_s": None, "mb_per_s": None},
                              {"name": "remove", "seconds": 0.8, "ops": 2000, "bytes": None,
                               "ops_per_s": None, "mb_per_s": None}],
                   "queue_write_cache": "write through", "accel": "tcg", "recorded": False,
                   "profile": {"name": "hdd", "summary": "7200 rpm", "flush_ms": 10, "write_through_ms": 8},
                   "real_disk": None, "recorder_overhead": 1.07},
    "crash": {"states": 20, "models": ["cache:32:random"],
              "summary": {"clean": 9, "data-loss": 7, "fs-corrupt": 3, "unmountable": 1, "infra-error": 0},
              "record": LOG, "states_per_minute": 41.5, "artifacts": "results/run-artifacts/x"},
    "seconds": 41.2}, sort_keys=True)


def test_a_line_without_a_schema_loads_as_version_1(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(TODAYS_LINE + "\n")
    cells, warnings = read_cells(path)
    assert warnings == []
    [cell] = cells
    assert cell.key == "xfs/nobarrier/tree-extract/ab12cd01ef" and cell.params == (("files", 2000), ("seed", 1))
    assert cell.phase("extract").op_rate == 800 and cell.throughput.queue_write_cache == "write through"
    assert cell.throughput.profile["flush_ms"] == 10 and cell.throughput.recorder_overhead == 1.07
    assert cell.crash.data_loss == 7 and cell.crash.unsafe_share == 11 / 20 and cell.crash.log == LOG
    assert cell.env.packages == (("e2fsprogs", "1.47.0-2"), ("xfsprogs", "6.1.0-1")) and cell.env.image == "a1b2c3"
    assert cell.settings["models"] == ["cache:32:random"] and cell.error is None
    assert through_json(cell) == cell


def test_a_newer_schema_is_refused_by_name(tmp_path):
    newer = {**json.loads(TODAYS_LINE), "schema": SCHEMA_VERSION + 1}
    with pytest.raises(SchemaError, match=f"schema {SCHEMA_VERSION + 1} is newer"):
        CellResult.from_json(newer)
    with pytest.raises(SchemaError, match=f"schema {SCHEMA_VERSION + 1} is newer"):
        CrashRun.from_json({**RUN.to_json(), "schema": SCHEMA_VERSION + 1})
    with pytest.raises(SchemaError, match="'two' is not a schema version"):
        CellResult.from_json({**newer, "schema": "two"})
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(newer) + "\n" + json.dumps(CELL.to_json()) + "\n")
    cells, warnings = read_cells(path)
    assert cells == [CELL]
    assert warnings == [f"{path}:1: skipped, results schema {SCHEMA_VERSION + 1} is newer than this plugpull reads "
                        f"(up to {SCHEMA_VERSION}): "
                        "upgrade plugpull"]


def test_a_torn_last_line_is_a_warning_and_the_next_append_starts_a_new_line(tmp_path):
    path = tmp_path / "r.jsonl"
    append_line(path, CELL.to_json())
    with open(path, "a") as f:
        f.write(json.dumps(FAILED.to_json())[:40])
    cells, warnings = read_cells(path)
    assert cells == [CELL]
    assert warnings == [f"{path}:2: skipped, truncated (an interrupted run?)"]
    append_line(path, FAILED.to_json())
    cells, warnings = read_cells(path)
    assert cells == [CELL, FAILED]
    assert warnings == [f"{path}:2: skipped, not valid JSON"]
    assert json.loads(path.read_text().splitlines()[-1])["schema"] == SCHEMA_VERSION


def test_the_last_line_of_a_key_wins_and_other_kinds_pass_quietly(tmp_path):
    path = tmp_path / "r.jsonl"
    rerun = replace(CELL, started="2026-11-21T01:00:00Z")
    for doc in (CELL.to_json(), {"kind": "matrix", "schema": 99}, FAILED.to_json(), rerun.to_json()):
        append_line(path, doc)
    cells, warnings = read_cells(path)
    assert cells == [rerun, FAILED] and warnings == []
    assert read_cells(tmp_path / "absent.jsonl") == ([], [])


def test_a_crash_run_counts_every_verdict_and_summarises_for_a_cell():
    assert RUN.summary == {"clean": 1, "data-loss": 1, "inconsistent": 0, "not-writable": 0, "fs-corrupt": 0,
                           "unmountable": 0, "kernel-crash": 0, "infra-error": 0}
    summary = RUN.crash_summary(artifacts="a")
    assert summary == CrashSummary(states=2, models=("reorder",), clean=1, data_loss=1, fs_corrupt=0,
                                   unmountable=0, infra_error=0, log=LOG, states_per_minute=4.0, artifacts="a")
    assert RUN.to_json()["states"][0]["lost"] == LOST and RUN.record["cut_pairs"] == [[1, 2], [3, 4]]


def test_a_schema_2_summary_counts_no_new_verdicts_but_keeps_unknown_counts_unknown():
    old = CrashSummary.from_json({"states": 4, "summary": {"clean": 3, "data-loss": 1, "fs-corrupt": 0,
                                                           "unmountable": 0, "infra-error": 0}})
    assert old.kernel_crash == 0 and old.inconsistent == 0 and old.unsafe == 1
    assert CrashSummary(states=4).unsafe is None


def test_a_kernel_crash_and_an_inconsistent_state_are_unsafe():
    summary = CrashSummary(states=4, clean=2, data_loss=0, fs_corrupt=0, unmountable=0, infra_error=0,
                           kernel_crash=1, inconsistent=1)
    assert summary.unsafe == 2 and summary.unsafe_share == 0.5


def test_the_schema_names_every_verdict_the_checker_gives():
    assert CrashSummary.from_json({}).count("data-loss") is None
    assert tuple(CRASH.to_json()["summary"]) == tuple(str(v) for v in POWER_CUT_VERDICTS)


def test_unsafe_share_without_a_state_count_or_any_checked_state():
    assert CrashSummary(clean=2, data_loss=1, fs_corrupt=0, unmountable=1).unsafe_share == 2 / 4
    assert CrashSummary(states=2, clean=0, data_loss=0, fs_corrupt=0, unmountable=0, infra_error=2).unsafe_share is None


def test_lenient_values_and_strict_identity():
    doc = {"kind": "cell", "fs": "xfs", "mode": "barrier", "workload": "sqlite", "params": {"journal": "wal"},
           "seconds": "soon", "throughput": {"phases": [{"seconds": 1.0, "ops": True}, "junk"]}}
    cell = CellResult.from_json(doc)
    assert cell.key == "xfs/barrier/sqlite/journal=wal" and cell.seconds is None
    assert cell.phases == (Phase("phase 1", 1.0),)
    with pytest.raises(ValueError, match="without mode, workload"):
        CellResult.from_json({"kind": "cell", "fs": "xfs"})


def test_a_summary_from_before_the_step_after_recovery_counts_no_state_not_writable():
    older = {"states": 3, "summary": {"clean": 2, "data-loss": 1, "inconsistent": 0, "fs-corrupt": 0,
                                      "unmountable": 0, "kernel-crash": 0, "infra-error": 0}}
    summary = CrashSummary.from_json(older)
    assert summary.count("not-writable") == 0 and summary.unsafe == 1
    assert CrashSummary.from_json({**older, "summary": {**older["summary"], "not-writable": 2}}).unsafe == 3
