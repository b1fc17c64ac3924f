"""The report in a real browser, headless Chromium at a 1280 px window: nothing overflows
horizontally, every link opens something that exists (a #fragment names an element there),
and each marked count opens a section listing exactly as many states.

The first test reads a report made from the fixture results of test_report_states (every
verdict, wide tables); the second, a VM test, the report of a small real `plugpull matrix`
run (or of PLUGPULL_REPORT_RESULTS, a results file of an earlier run, to spare the run).
Both skip, saying why, when Chromium is missing: `make test-report` installs it.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from plugpull.report import report
from plugpull.report.faults import fault_anchor
from plugpull.results import append_line
from tests.chromium import WIDTH, chromium, follow, measure
from tests.unit.results.test_fault_results import CLEAN, REPORTED, SILENT
from tests.unit.report.test_report import LINES
from tests.unit.report.test_states import run  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(chromium() is None, reason="no chromium: `make test-report` installs "
                                "Debian's chromium (apt-get install -y --no-install-recommends chromium)")
SMALL_RUN = ["--fs", "ext4", "--mode", "barrier,nobarrier", "--workload", "fsync-files",
             "--param", "fsync-files.count=12", "--states", "6"]


def check_in_browser(out: Path, index: str = "report.html") -> dict[Path, object]:
    """Every page reached from `index`, measured; fails on overflow, a broken link, or a
    count that lists another number of states than it says."""
    __tracebackhide__ = True
    pages = {(out / index).resolve(): measure(out / index)}
    todo = list(pages)
    while todo:
        page = pages[todo.pop()]
        assert page.scroll_width <= WIDTH and not page.wider, f"{page.path} overflows: {page.wider}"
        for written, url, _ in page.links:
            known = set(pages)
            assert follow(url, pages) is None, f"{page.path}: {written}: {follow(url, pages)}"
            todo += [p for p in pages if p not in known]
    main = pages[(out / index).resolve()]
    counts = [(url, text) for written, url, text in main.links if written.startswith(("states/", "faults.html#"))]
    for url, text in counts:
        target, _, section = url.partition("#")
        listed = next(p for path, p in pages.items() if path.as_uri() == target).sections[section]
        assert listed == int(text.split()[0]), f"{url}: the count says {text}, the page lists {listed}"
    return pages


def test_the_fixture_report_fits_1280_px_and_its_links_work(run, tmp_path):  # noqa: F811
    for fault in (SILENT, REPORTED, CLEAN):
        append_line(run, fault.to_json())
    out = tmp_path / "rep"
    report(run, out)
    pages = check_in_browser(out)
    assert len(pages) == 3  # the report, nobarrier's state page (nocache's states are not found), the faults'
    assert sum(p.sections.get(fault_anchor(SILENT), 0) for p in pages.values()) == 1


def test_the_widest_table_of_the_report_tests_fits_too(tmp_path):
    results = tmp_path / "matrix.jsonl"
    results.write_text("\n".join(LINES) + "\n")
    report(results, tmp_path / "rep")
    check_in_browser(tmp_path / "rep")


def test_the_findings_of_two_hunts_fit_and_their_links_work(tmp_path):
    from tests.unit.report.test_hunts import BTRFS, RENAMES, both_names, link_unlink, make_hunt, symlink_rename, workload_of
    from plugpull.report.hunts import hunt_report
    renames = [both_names(workload_of(t)) for t in RENAMES]
    first = make_hunt(tmp_path / "a", BTRFS, renames + [link_unlink(), symlink_rename()])
    second = make_hunt(tmp_path / "b", {**BTRFS, "kernel": "7.3.4+deb13-amd64"}, renames[:1], saved=False)
    hunt_report([first, second], tmp_path / "rep")
    pages = check_in_browser(tmp_path / "rep", "findings.html")
    assert len(pages) == 1 + 3 + 5  # the findings, a page per finding, one per saved workload


def test_the_report_of_committed_case_results_fits_too(tmp_path):
    """Real results: bonnie's eleven phases make the widest table (shown as two)."""
    results = Path(__file__).resolve().parents[3] / "suites" / "results" / "seed-004-ext-bonnie-three-modes.jsonl"
    report(results, tmp_path / "rep")
    assert (tmp_path / "rep" / "report.html").read_text().count('<div class="wide">') == 3
    check_in_browser(tmp_path / "rep")


@pytest.mark.vm
def test_the_report_of_a_small_real_run_fits_and_its_links_work(tmp_path):
    given = os.environ.get("PLUGPULL_REPORT_RESULTS")
    results = Path(given) if given else tmp_path / "small.jsonl"
    if not given:
        subprocess.run([sys.executable, "-m", "plugpull", "matrix", *SMALL_RUN, "--results", str(results)],
                       check=True, timeout=1200)
    out = tmp_path / "rep"
    report(results, out)
    pages = check_in_browser(out)
    main = pages[(out / "report.html").resolve()]
    assert any(written.startswith("states/") for written, _, _ in main.links), "no count of unsafe states links"


def test_the_browser_check_fails_on_a_broken_link_and_on_overflow(tmp_path):
    page = tmp_path / "p.html"
    page.write_text('<!DOCTYPE html><html><body><section id="s"></section><a href="gone.html">1</a>'
                    '<a href="p.html#nope">2</a><a href="p.html#s">3</a>'
                    '<div style="width: 1400px">wide</div></body></html>')
    measured = measure(page)
    assert measured.scroll_width > WIDTH and measured.wider == ["div"]
    pages = {page.resolve(): measured}
    assert [follow(url, pages) for _, url, _ in measured.links] == ["no such file", "no element with id 'nope'", None]
