"""The XFS log-hole cases hold per kernel what was measured on each (docs/findings/xfs-log-hole-report.md):
a 5.10 recording (every iclog write PREFLUSH+FUA) leaves only clean states; 6.1, 6.12 and 7.3
recordings leave unmountable ones; the kept state is unmountable on every kernel."""

from plugpull.paths import ROOT
from plugpull.results import CellResult, CrashSummary
from plugpull.runs.cases import expectation_failures, load_case

CASES = ROOT / "suites" / "cases"
RERECORD = CASES / "finding-xfs-log-hole-rerecord.toml"
KEPT = CASES / "finding-xfs-log-hole.toml"
AFTER_5_14 = ("host", "debian:6.1", "debian:6.12", "debian:7.3")


def bonnie(unmountable: int, states: int = 40) -> CellResult:
    crash = CrashSummary(states=states, clean=states - unmountable, data_loss=0, fs_corrupt=0,
                         unmountable=unmountable, infra_error=0)
    return CellResult(key="xfs/barrier/bonnie/0", fs="xfs", mode="barrier", workload="bonnie", crash=crash)


def test_the_rerecording_case_runs_on_the_five_kernels_measured():
    assert set(load_case(RERECORD).kernels) == {"debian:5.10", *AFTER_5_14}


def test_on_5_10_only_clean_states_reproduce_the_case():
    case = load_case(RERECORD).expected_on("debian:5.10")
    assert expectation_failures(case, [bonnie(0)]) == []
    failures = expectation_failures(case, [bonnie(1)])
    assert len(failures) == 1 and "only clean states" in failures[0]


def test_after_5_14_an_unmountable_state_is_expected():
    for kernel in AFTER_5_14:
        case = load_case(RERECORD).expected_on(kernel)
        assert expectation_failures(case, [bonnie(7)]) == [], kernel
        assert len(expectation_failures(case, [bonnie(0)])) == 2, kernel


def test_the_kept_state_is_expected_unmountable_on_every_kernel():
    case = load_case(KEPT)
    for kernel in ("debian:5.10", *AFTER_5_14):
        assert dict(case.expected_on(kernel).verdicts) == {"barrier": "unmountable"}, kernel
