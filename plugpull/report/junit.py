"""JUnit XML for `plugpull reproduce --junit FILE`: what a CI server reads.

One <testsuite> per case file, one <testcase> per case x kernel x mode (a [faults] table adds
one per kernel, named "faults"; a [replay] case has one per kernel, its kept state's mode).
A testcase is
- passed: the mode ran, and the case's [expect] table (the kernel's own, where it has one)
  holds for it;
- <failure>: [expect] is not borne out: the reason, the verdict counts and where the states
  that are not clean were saved;
- <error>: the harness failed (a cell's harness failure, or one that stopped the case):
  never a filesystem verdict;
- <skipped>: the mode was not run (a kernel after the one the harness failed on), or its
  [expect] is about crash states and `--no-crash` checked none.
Each testcase's <system-out> carries its verdict counts and artifact paths, passed ones too.
Written with the standard library's xml.etree, every text stripped of what XML 1.0 cannot hold.
"""

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

from plugpull.files import atomic_write

OUTCOMES = ("passed", "failure", "error", "skipped")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class JUnitCase:
    """One testcase: `detail` is the text of its failure, error or skipped element, `out` its
    system-out."""

    classname: str
    name: str
    outcome: str = "passed"
    message: str = ""
    detail: str = ""
    out: str = ""
    seconds: float = 0.0

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome {self.outcome!r}: not one of {', '.join(OUTCOMES)}")
        if not self.detail:
            object.__setattr__(self, "detail", self.message)

    def became(self, outcome: str, message: str, detail: str = "") -> "JUnitCase":
        return replace(self, outcome=outcome, message=message, detail=detail)


@dataclass(frozen=True)
class JUnitSuite:
    name: str
    tests: tuple
    properties: tuple = ()  # (name, value) pairs

    def count(self, outcome: str) -> int:
        return sum(t.outcome == outcome for t in self.tests)


def clean(text: str) -> str:
    """`text` as XML 1.0 can hold it: control characters (a console's escapes) dropped."""
    return _NOT_XML.sub("", str(text))


def _totals(element: ET.Element, suites: list) -> None:
    element.set("tests", str(sum(len(s.tests) for s in suites)))
    for outcome, attribute in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        element.set(attribute, str(sum(s.count(outcome) for s in suites)))
    element.set("time", f"{sum(t.seconds for s in suites for t in s.tests):.3f}")


def _testcase(parent: ET.Element, test: JUnitCase) -> None:
    case = ET.SubElement(parent, "testcase", classname=clean(test.classname), name=clean(test.name),
                         time=f"{test.seconds:.3f}")
    if test.outcome != "passed":
        element = ET.SubElement(case, test.outcome, message=clean(test.message.splitlines()[0] if test.message else ""))
        if test.outcome != "skipped":
            element.set("type", "expectation" if test.outcome == "failure" else "harness")
        element.text = clean(test.detail)
    if test.out:
        ET.SubElement(case, "system-out").text = clean(test.out)


def junit_xml(suites: list, name: str = "plugpull reproduce") -> str:
    """The document: <testsuites> holding one <testsuite> per JUnitSuite, counts on each."""
    root = ET.Element("testsuites", name=name)
    _totals(root, suites)
    for suite in suites:
        element = ET.SubElement(root, "testsuite", name=clean(suite.name))
        _totals(element, [suite])
        if suite.properties:
            properties = ET.SubElement(element, "properties")
            for key, value in suite.properties:
                ET.SubElement(properties, "property", name=clean(key), value=clean(value))
        for test in suite.tests:
            _testcase(element, test)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: Path, suites: list) -> None:
    """Atomically: a CI server reads the old file or the whole new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, junit_xml(suites))
