"""`plugpull reproduce --junit` on a guest: the XFS log-hole finding's kept state, rechecked on
the host's kernel (one check), is one passed testcase whose output says what the state is."""

import xml.etree.ElementTree as ET

import pytest

from plugpull.cli import main
from plugpull.paths import ROOT

pytestmark = pytest.mark.vm


def test_the_finding_case_is_one_passed_testcase(tmp_path, accel):
    junit = tmp_path / "ci" / "junit.xml"
    case = ROOT / "suites" / "cases" / "finding-xfs-log-hole.toml"
    assert main(["reproduce", "--accel", str(accel), str(case), "--junit", str(junit)]) == 0
    root = ET.parse(junit).getroot()
    assert [root.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["1", "0", "0", "0"]
    [testcase] = root.iter("testcase")
    assert (testcase.get("classname"), testcase.get("name")) == ("finding-xfs-log-hole", "barrier [host]")
    out = testcase.find("system-out").text
    assert "1 state: unmountable" in out and "suites/records/xfs-log-hole" in out
