"""The tests that run only on request: every variable a test reads is either an opt-in that
`make test-all` sets or one known to be something else; the count at the end of a run is of
the skips that name an opt-in variable and of no other."""

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from fixtures.opt_in import LONG_VM, OPT_IN, left_to_test_all, long_vm_entry

ROOT = Path(__file__).resolve().parents[3]
NOT_OPT_IN = {
    "PLUGPULL_REGEN_GOLDEN": "rewrites the golden files instead of comparing with them",
    "PLUGPULL_FSTESTS": "a real fstests tree the developer points at (make test-all PLUGPULL_FSTESTS=DIR)",
    "PLUGPULL_REPORT_RESULTS": "an earlier run's results for the report's browser test (make test-report)",
}
_READ = re.compile(r"os\.environ(?:\.get\(|\[)\s*[\"'](PLUGPULL_[A-Z0-9_]+)")


def variables_read() -> set[str]:
    files = [*ROOT.glob("tests/**/*.py"), *ROOT.glob("suites/*.py"), *ROOT.glob("fixtures/*.py")]
    return {name for path in files for name in _READ.findall(path.read_text())}


def test_every_variable_a_test_reads_is_an_opt_in_or_known_to_be_something_else():
    read = variables_read()
    assert {"PLUGPULL_FAULTS_ALL", "PLUGPULL_LIBVIRT_STEPS"} <= read  # the scan sees them
    assert read - set(NOT_OPT_IN) == set(OPT_IN)


def test_make_test_all_sets_every_opt_in_variable():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test-all:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe, "no test-all target"
    assert {name for name, value in re.findall(r"(PLUGPULL_[A-Z_]+)=(\S+)", recipe.group(1)) if value == "1"} == \
        set(OPT_IN)


def skip(reason: str):
    return SimpleNamespace(longrepr=("tests/test_x.py", 12, f"Skipped: {reason}"))


def test_the_count_left_to_test_all_is_of_the_skips_naming_an_opt_in_variable():
    skipped = [skip("the fault sweep: PLUGPULL_FAULTS_ALL=1 (make faults-sweep)"),
               skip("the full stack suite runs with PLUGPULL_STACK_SUITE=1"),
               skip("the full stack suite runs with PLUGPULL_STACK_SUITE=1"),
               skip("no chromium on this machine"),
               skip("set PLUGPULL_REGEN_GOLDEN=1 to rewrite it")]
    assert left_to_test_all(skipped) == (3, ["PLUGPULL_FAULTS_ALL", "PLUGPULL_STACK_SUITE"])
    assert left_to_test_all([]) == (0, [])


def an_item(file: str, name: str):
    return SimpleNamespace(path=Path("/x") / file, name=name, originalname=name.partition("[")[0])


def test_a_long_vm_entry_names_a_file_a_test_or_one_of_its_params_and_nothing_else():
    assert long_vm_entry(an_item("test_cluster_hunt_vm.py", "test_anything")) == "test_cluster_hunt_vm.py"
    assert long_vm_entry(an_item("test_checker.py", "test_fast_path_agrees_with_one_boot_per_state"))
    assert long_vm_entry(an_item("test_guest.py", "test_disk_and_cache_as_configured[ide-wc0]"))
    assert long_vm_entry(an_item("test_guest.py", "test_disk_and_cache_as_configured[ide-wc1]")) is None
    assert long_vm_entry(an_item("test_checker.py", "test_checker_flags_each_kind_of_damage")) is None


def test_every_long_vm_entry_names_a_test_that_is_collected():
    """A renamed test or param would otherwise drop out of the table unseen and run in `make test` again."""
    files = sorted({str(p.relative_to(ROOT)) for entry in LONG_VM for p in ROOT.glob(f"*/**/{entry.split('::')[0]}")})
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
                            cwd=ROOT, capture_output=True, text=True).stdout
    collected = set()
    for node in re.findall(r"^\S+\.py::\S+$", listed, re.M):
        path, _, name = node.partition("::")
        file = Path(path).name
        collected |= {file, f"{file}::{name}", f"{file}::{name.partition('[')[0]}"}
    assert "test_guest.py::test_disk_and_cache_as_configured[ahci-wc1]" in collected  # the listing is read
    assert set(LONG_VM) - collected == set()
