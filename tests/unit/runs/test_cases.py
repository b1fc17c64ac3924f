"""Case files: every shipped case is valid; a broken one is refused with the field named."""

import pytest

from tests.case_files import write_case
from plugpull.paths import ROOT
from plugpull.results import CellResult, CrashSummary
from plugpull.runs.cases import CaseError, expectation_failures, load_case, scaled

CASES = sorted((ROOT / "suites" / "cases").glob("*.toml"))
GOOD = """
title = "t"
[matrix]
fs = ["xfs"]
modes = ["barrier", "nobarrier"]
workloads = ["fsync-files"]
[workload.fsync-files]
count = 40
[crash]
states = 10
[expect]
unsafe = ["nobarrier"]
safe = ["barrier"]
"""


def test_there_is_a_case_per_seed_and_a_template():
    names = [p.name for p in CASES]
    for seed in ("000", "001", "002", "003", "004"):
        assert any(n.startswith(f"seed-{seed}") for n in names), seed
    assert any(n.startswith("template") for n in names)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_shipped_case_is_valid(path):
    case = load_case(path)
    assert case.title and (case.cells or case.replay or case.faults.cases)
    for cell in case.cells:
        cell.validate()


@pytest.mark.parametrize("change, field", [
    (("modes = [\"barrier\", \"nobarrier\"]", "modes = [\"barrier\", \"fast\"]"), "[matrix] modes[1]"),
    (("fs = [\"xfs\"]", "fs = [\"zfs\"]"), "[matrix] fs[0]"),
    (("states = 10", "states = 0"), "[crash] states"),
    (("states = 10", "states = 10\nmodels = [\"bogus\"]"), "[crash] models[0]"),
    (("count = 40", "colour = 1"), "[workload.fsync-files]"),
    (("[crash]", "[crash]\ntrigger = \"soon\""), "[crash] trigger"),
    (("title = \"t\"", "title = \"t\"\ncolour = 1"), "colour"),
    (("workloads = [\"fsync-files\"]", "workloads = [\"fsync-files\"]\nprofile = \"floppy\""), "[matrix] profile"),
    (("unsafe = [\"nobarrier\"]", "unsafe = [\"lying\"]"), "[expect] unsafe[0]"),
    (("[matrix]\n", "[matrix]\nbus = \"usb\"\n"), "[matrix] bus"),
])
def test_broken_case_names_the_field(tmp_path, change, field):
    text = GOOD.replace(*change)
    assert text != GOOD
    with pytest.raises(CaseError) as e:
        load_case(write_case(tmp_path, text))
    assert field in str(e.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(CaseError, match="no such case file"):
        load_case(tmp_path / "nope.toml")
    with pytest.raises(CaseError, match="not valid TOML"):
        load_case(write_case(tmp_path, "title = "))
    with pytest.raises(CaseError, match="matrix: required"):
        load_case(write_case(tmp_path, "title = 't'\n"))


def test_scale_shrinks_size_knobs_only():
    assert scaled({"files": 28566, "seed": 7, "journal": "wal"}, 0.1) == {"files": 2857, "seed": 7, "journal": "wal"}
    assert scaled({"count": 3}, 0.01) == {"count": 1}
    assert scaled({"files_k": 16}, 0.1) == {"files_k": 16}


def crash_doc(mode, clean, states=10):
    crash = CrashSummary(states=states, clean=clean, data_loss=states - clean, fs_corrupt=0, unmountable=0,
                         infra_error=0)
    return CellResult(key=f"xfs/{mode}/fsync-files/0", fs="xfs", mode=mode, workload="fsync-files", crash=crash)


def test_expectations(tmp_path):
    case = load_case(write_case(tmp_path, GOOD))
    assert expectation_failures(case, [crash_doc("barrier", 10), crash_doc("nobarrier", 3)]) == []
    failures = expectation_failures(case, [crash_doc("barrier", 9), crash_doc("nobarrier", 10)])
    assert len(failures) == 2 and "nobarrier" in failures[0] and "barrier" in failures[1]
    assert "no crash states" in expectation_failures(case, [crash_doc("nobarrier", 3)])[0]


def test_a_hosts_table_names_the_checkers_hosts(tmp_path):
    uris = ["qemu:///system", "qemu+ssh://root@rack2/system"]
    case = load_case(write_case(tmp_path, GOOD + f"[hosts]\nuris = {uris!r}\n".replace("'", '"')))
    assert case.hosts == tuple(uris)
    assert load_case(write_case(tmp_path, GOOD)).hosts == ()


@pytest.mark.parametrize("hosts, message", [
    ('uris = ["http://rack2/"]', "libvirt QEMU URI"),
    ('uris = ["qemu:///system", "qemu:///system"]', "names a host twice"),
    ("uris = []", "at least 1 item"),
    ('uri = "qemu:///system"', "required field is missing"),
])
def test_a_bad_hosts_table_is_refused_with_its_field(tmp_path, hosts, message):
    with pytest.raises(CaseError) as e:
        load_case(write_case(tmp_path, GOOD + f"[hosts]\n{hosts}\n"))
    assert "[hosts]" in str(e.value) and message in str(e.value)
    assert len(str(e.value).splitlines()) == 1
