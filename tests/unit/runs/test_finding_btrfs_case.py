"""The btrfs rename case holds per kernel what was measured (docs/findings/btrfs-rename-both-names.md):
on the host (6.1) an inconsistent state is expected; on 5.10, whose fsync of the new directory
commits the transaction, only clean states."""

from plugpull.paths import ROOT
from plugpull.results import CellResult, CrashSummary
from plugpull.runs.cases import expectation_failures, load_case

CASE = ROOT / "suites" / "cases" / "finding-btrfs-rename-both-names.toml"


def renamed(inconsistent: int, states: int = 4) -> CellResult:
    crash = CrashSummary(states=states, clean=states - inconsistent, data_loss=0, fs_corrupt=0,
                         unmountable=0, infra_error=0, inconsistent=inconsistent)
    return CellResult(key="btrfs/barrier/gen:seq1-000253/0", fs="btrfs", mode="barrier",
                      workload="gen:seq1-000253", crash=crash)


def test_the_case_is_one_small_btrfs_cell_on_the_host_and_5_10():
    case = load_case(CASE)
    assert case.kernels == ("host", "debian:5.10")
    (cell,) = case.cells
    assert (cell.fs, cell.mode, cell.workload) == ("btrfs", "barrier", "gen:seq1-000253")


def test_on_the_host_an_inconsistent_state_is_expected():
    case = load_case(CASE).expected_on("host")
    assert expectation_failures(case, [renamed(1)]) == []
    failures = expectation_failures(case, [renamed(0)])
    assert len(failures) == 1 and "inconsistent" in failures[0]


def test_on_5_10_only_clean_states_reproduce_the_case():
    case = load_case(CASE).expected_on("debian:5.10")
    assert expectation_failures(case, [renamed(0)]) == []
    failures = expectation_failures(case, [renamed(1)])
    assert len(failures) == 1 and "only clean states" in failures[0]
