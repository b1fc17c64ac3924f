"""Stacks in case files (crash.stack, crash.lose_disk) and as rows of the report. No VM."""

import json
from pathlib import Path

import pytest

from tests.case_files import write_case
from plugpull.paths import ROOT
from plugpull.report.tables import groups, render_table, slowdown
from plugpull.results import read_cells
from plugpull.runs.cases import CaseError, load_case

CASE = """
title = "t"
[matrix]
fs = ["xfs"]
modes = ["barrier"]
workloads = ["fsync-files"]
[crash]
stack = "md-raid5"
lose_disk = "LOSE"
"""


def test_the_write_hole_cases_run_raid5_ppl_and_journal_with_member_0_lost():
    raid5, ppl, journal = (load_case(ROOT / "suites" / "cases" / f"write-hole-md-{v}.toml")
                           for v in ("raid5", "raid5-ppl", "raid5-journal"))
    assert raid5.unsafe == ("barrier",) and ppl.safe == ("barrier",) and journal.safe == ("barrier",)
    for case, stack in ((raid5, "md-raid5"), (ppl, "md-raid5-ppl"), (journal, "md-raid5-journal")):
        [cell] = case.cells
        assert cell.spec.resolve().lost_member == 0 and cell.to_json()["stack"] == stack
    assert raid5.cells[0].key() != ppl.cells[0].key(), "the stack is part of the cell's key"


def test_a_case_names_a_bad_lost_disk(tmp_path):
    path = write_case(tmp_path, CASE.replace("LOSE", "two"))
    with pytest.raises(CaseError, match=r"\[crash\] lose_disk: 'two': expected a member number"):
        load_case(path)
    path.write_text(CASE.replace("LOSE", "3"))
    with pytest.raises(Exception, match="members 0 to 2"):
        load_case(path).cells[0].validate()


def cell(mode: str, seconds: float, **settings) -> str:
    return json.dumps({"kind": "cell", "key": f"xfs/{mode}/fsync-files/{len(settings)}{mode}", "fs": "xfs",
                       "mode": mode, "workload": "fsync-files", "params": {"count": 40}, "cell": settings,
                       "throughput": {"phases": [{"name": "create", "seconds": seconds, "ops": 40, "bytes": None}]},
                       "crash": None, "seconds": 1.0})


def test_stacks_are_rows_measured_against_plain_barrier(tmp_path):
    results = Path(tmp_path / "r.jsonl")
    results.write_text("\n".join([cell("barrier", 4.0, stack="md-raid5", lose_disk="0"), cell("barrier", 2.0),
                                  cell("nobarrier", 1.0, stack="lvm")]) + "\n")
    cells, _ = read_cells(results)
    [group] = groups(cells)
    assert [group.label(c) for c in group.cells] == ["barrier", "lvm nobarrier", "md-raid5 lose 0 barrier"]
    assert group.baseline.settings == {}, "plain barrier is what a stack's row is measured against"
    assert [slowdown(c, group) for c in group.cells] == [1.0, 0.5, 2.0]
    assert "md-raid5 lose 0 barrier" in render_table(cells)
