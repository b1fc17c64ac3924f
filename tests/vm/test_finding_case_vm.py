"""The XFS log-hole finding's case replays its kept record: the minimised state, rebuilt
byte for byte, is unmountable, with XFS's own error, every time (one check)."""

import re

import pytest

from plugpull.cli.reproduce import fs_lines
from plugpull.paths import ROOT
from plugpull.runs.cases import load_case, replay_failures
from plugpull.runs.replaycase import run_replay

pytestmark = pytest.mark.vm

CASE = ROOT / "suites" / "cases" / "finding-xfs-log-hole.toml"


def test_the_finding_case_reproduces_an_unmountable_xfs(rig, tmp_path):
    case = load_case(CASE)
    r = run_replay(case.replay, rig, tmp_path)
    assert r["verdict"] == "unmountable", r["reason"]
    assert r["digest"] == r["digest_expected"]
    said = fs_lines(r["kernel"], "xfs")
    assert any(re.fullmatch(r"XFS \(\w+\): log mount/recovery failed: error -117", line) for line in said), said
    assert replay_failures(case, r["verdict"]) == []
