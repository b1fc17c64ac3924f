"""The kernel as a matrix dimension, without a VM: cell keys per kernel, case files' [matrix]
kernels, --kernel lists checked before anything is fetched, and the report's tables per kernel."""

import json
import re
import shutil

import pytest

from plugpull.cli import main
from plugpull.crash.spec import CrashSpec
from plugpull.errors import UsageError
from plugpull.kernels.option import kernel_options
from plugpull.kernels.resolve import Kernels
from plugpull.report.tables import groups, release_order, render_table
from plugpull.results import CellResult, CrashSummary, read_cells
from plugpull.runs.cases import CaseError, expectation_failures, load_case
from plugpull.runs.matrix import cells, for_kernel
from tests.fake_apt import NEW, OLD, OLD_VERSION, FakeApt, build_debs
from tests.case_files import write_case


def some_cells():
    return cells(CrashSpec(), ["xfs", "ext4"], ["barrier", "nobarrier"], ["fsync-files"])


def test_the_host_kernel_keeps_the_keys_of_earlier_results():
    todo = some_cells()
    assert [c.key() for c in for_kernel(todo, "")] == [c.key() for c in todo]
    assert all(c.to_json()["kernel"] == "" for c in todo)


def test_each_kernel_gives_its_cells_other_keys():
    todo = some_cells()
    keys = [{c.key() for c in for_kernel(todo, k)} for k in ("", OLD, NEW)]
    assert all(len(k) == len(todo) for k in keys)
    assert not (keys[0] & keys[1]) and not (keys[1] & keys[2]) and not (keys[0] & keys[2])
    assert for_kernel(todo, NEW)[0].to_json()["kernel"] == NEW


CASE = """
title = "kernels"
[matrix]
fs = ["xfs"]
modes = ["barrier"]
workloads = ["fsync-files"]
"""


def test_a_case_file_names_its_kernels(tmp_path):
    assert load_case(write_case(tmp_path, CASE)).kernels == ("host",)
    case = load_case(write_case(tmp_path, CASE + 'kernels = ["host", "debian:6.12", "debian:7.3"]\n'))
    assert case.kernels == ("host", "debian:6.12", "debian:7.3")
    with pytest.raises(CaseError, match=r"\[matrix\] kernels: debian:6.12 is given twice"):
        load_case(write_case(tmp_path, CASE + 'kernels = ["host", "debian:6.12", "debian:7.3", "debian:6.12"]\n'))


@pytest.mark.parametrize("kernels, message", [
    ('["debian:"]', r"\[matrix\] kernels\[0\]: debian: names no version"),
    ('["host", "ubuntu:6.1"]', r"\[matrix\] kernels\[1\]: ubuntu:6.1: not a Debian kernel"),
    ('["/boot/vmlinuz"]', r"\[matrix\] kernels\[0\]: .*not a Debian kernel"),
    ("[]", r"\[matrix\] kernels: List should have at least 1 item"),
    ('"debian:6.12"', r"\[matrix\] kernels: Input should be a valid list"),
])
def test_bad_kernels_in_a_case_file_are_named(tmp_path, kernels, message):
    with pytest.raises(CaseError, match=message):
        load_case(write_case(tmp_path, CASE + f"kernels = {kernels}\n"))


@pytest.fixture
def fake(tmp_path):
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    apt = FakeApt(tmp_path / "kernels" / "apt", build_debs(tmp_path / "debs"))
    return Kernels(tmp_path / "kernels", apt=apt), apt


def test_every_kernel_of_a_list_is_checked_before_one_is_fetched(fake):
    kernels, apt = fake
    with pytest.raises(UsageError, match="debian:9.9: no such kernel"):
        kernel_options(["debian:6.12", "host", "debian:9.9"], None, kernels)
    assert apt.downloads == 0
    with pytest.raises(UsageError, match="--kernel: host is given twice"):
        kernel_options(["host", "debian:7.3", "debian:6.12", "host"], None, kernels)
    got = kernel_options(["host", "debian:7.3", "debian:6.12"], None, kernels)
    assert [(name, k and k.release) for name, k in got] == [("host", None), ("debian:7.3", NEW),
                                                            ("debian:6.12", OLD)]
    assert apt.downloads == 2


def test_one_kernel_under_two_names_is_refused_before_any_fetch(fake):
    kernels, apt = fake
    with pytest.raises(UsageError, match=re.escape(f"--kernel: debian:6.12 and debian:{OLD_VERSION} are one kernel ({OLD})")):
        kernel_options(["debian:6.12", "host", f"debian:{OLD_VERSION}"], None, kernels)
    assert apt.downloads == 0


def test_a_kernel_file_goes_alone(tmp_path):
    with pytest.raises(UsageError, match="--modules goes with one kernel file"):
        kernel_options(["host", "debian:6.12"], tmp_path)
    with pytest.raises(UsageError, match="a kernel file goes alone"):
        kernel_options(["host", str(tmp_path / "bzImage")], None)


def _no_archive(*args):
    raise AssertionError("the archive was asked")


@pytest.mark.parametrize("argv", [
    ["crash", "--kernel", "host,debian:6.12"], ["shell", "--kernel", "debian:6.12,debian:7.3"],
    ["matrix", "--kernel", "host,debian:"], ["matrix", "--kernel", "debian:7.3", "--modules", "/"],
])
def test_bad_kernel_lists_exit_2_in_one_line(argv, capsys, tmp_path, monkeypatch):
    """Said before Debian's archive is asked: these need no network and no cache."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("plugpull.kernels.resolve.Kernels.choose", _no_archive)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plugpull: --kernel") or err.startswith("plugpull: --modules"), err
    assert "\n" not in err and not (tmp_path / "results").exists()


ENV = {"accel": "tcg", "qemu": "7.2.22", "packages": {}, "bus": "ahci"}


def result_line(kernel: str, mode: str, seconds: float, data_loss: int) -> str:
    return json.dumps({
        "kind": "cell", "key": f"xfs/{mode}/fsync-files/{kernel[:4]}", "fs": "xfs", "mode": mode,
        "workload": "fsync-files", "params": {"count": 40}, "env": {**ENV, "kernel": kernel},
        "throughput": {"phases": [{"name": "fsync", "seconds": seconds, "ops": 40, "bytes": None}]},
        "crash": {"states": 10, "models": ["reorder"], "summary": {"clean": 10 - data_loss, "data-loss": data_loss}}})


def test_the_tables_group_by_kernel_oldest_first_each_mode_against_its_own_barrier(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join([result_line(NEW, "barrier", 8.0, 0), result_line(NEW, "nobarrier", 2.0, 9),
                               result_line(OLD, "barrier", 4.0, 0), result_line(OLD, "nobarrier", 1.0, 7)]) + "\n")
    found = read_cells(path)[0]
    assert [g.kernel for g in groups(found)] == [OLD, NEW]
    table = render_table(found)
    first, second = table.index(f"xfs / fsync-files  (count=40)  [kernel {OLD}]"), table.index(f"[kernel {NEW}]")
    assert first < second
    assert table.count("x0.25") == 2  # nobarrier 4 times faster than barrier on each kernel
    from plugpull.report.headline import headline
    assert headline(found) == "Over the 2 tables below (2 kernels), nobarrier took x0.25 barrier's time."


def test_one_kernel_keeps_the_tables_as_they_were(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(result_line(OLD, "barrier", 4.0, 0) + "\n")
    table = render_table(read_cells(path)[0])
    assert "[kernel" not in table and "xfs / fsync-files  (count=40)\n" in table


def test_releases_sort_by_their_numbers():
    releases = ["7.3.4+deb13-amd64", "6.1.0-50-amd64", "6.12.117+deb13-amd64", "6.1.0-9-amd64", "5.10.0-32-amd64"]
    assert sorted(releases, key=release_order) == [
        "5.10.0-32-amd64", "6.1.0-9-amd64", "6.1.0-50-amd64", "6.12.117+deb13-amd64", "7.3.4+deb13-amd64"]


PER_KERNEL = """kernels = ["debian:5.10", "debian:6.12"]
[expect]
verdicts = {barrier = "unmountable"}
[expect.kernels."debian:5.10"]
safe = ["barrier"]
"""


def crash_cell(clean: int, unmountable: int) -> CellResult:
    crash = CrashSummary(states=clean + unmountable, clean=clean, data_loss=0, fs_corrupt=0,
                         unmountable=unmountable, infra_error=0)
    return CellResult(key="xfs/barrier/fsync-files/0", fs="xfs", mode="barrier", workload="fsync-files", crash=crash)


def test_expect_can_differ_per_kernel(tmp_path):
    case = load_case(write_case(tmp_path, CASE + PER_KERNEL))
    unmountable, clean = [crash_cell(8, 2)], [crash_cell(10, 0)]
    assert expectation_failures(case.expected_on("debian:6.12"), unmountable) == []
    assert expectation_failures(case.expected_on("debian:6.12"), clean) == [
        "barrier: expected a state judged unmountable, saw none"]
    assert expectation_failures(case.expected_on("debian:5.10"), clean) == []
    assert expectation_failures(case.expected_on("debian:5.10"), unmountable) == [
        "barrier: expected only clean states, saw 2 that are not"]


@pytest.mark.parametrize("extra, message", [
    ('[expect.kernels."debian:7.3"]\nsafe = ["barrier"]\n',
     r'\[expect.kernels."debian:7.3"\]: \'debian:7.3\' is not one of \[matrix\] kernels \(host\)'),
    ('[expect.kernels."host"]\nsafe = ["nocache"]\n', r'\[expect.kernels."host"\] safe\[0\]: unknown value'),
    ('[expect.kernels."host"]\nverdicts = {barrier = "dead"}\n', r"unknown verdict 'dead'"),
    ('[expect.kernels."host"]\ncolour = 1\n', r"\[expect\] kernels.host.colour: unknown field"),
])
def test_bad_per_kernel_expectations_are_named(tmp_path, extra, message):
    with pytest.raises(CaseError, match=message):
        load_case(write_case(tmp_path, CASE + extra))


def test_the_plot_and_the_page_group_by_kernel_too(tmp_path):
    from plugpull.report.html import render_html
    from plugpull.report.plot import panels

    path = tmp_path / "m.jsonl"
    path.write_text("\n".join([result_line(NEW, "barrier", 8.0, 0), result_line(OLD, "barrier", 4.0, 0),
                               result_line(OLD, "nobarrier", 1.0, 7)]) + "\n")
    found = read_cells(path)[0]
    assert [p.title.rsplit("[", 1)[-1] for p in panels(found)] == [f"kernel {OLD}]", f"kernel {NEW}]"]
    render_html(found, None, tmp_path / "r.html", [], [])
    page = (tmp_path / "r.html").read_text()
    assert page.index(f"[kernel {OLD}]") < page.index(f"[kernel {NEW}]")
