"""A reproduced case as JUnit testcases (`junit.JUnitCase`): one per kernel x mode, judged from the
results file by the case's [expect] table as `plugpull reproduce` judges it, mode by mode."""

from collections import Counter
from dataclasses import replace
from pathlib import Path

from plugpull.report.junit import JUnitSuite, JUnitCase
from plugpull.results.schema import VERDICTS


def counts(crash) -> str:
    """"20 states (7 distinct): 12 clean, 8 data-loss"; the verdicts no state got left out."""
    if crash is None:
        return "no crash states (not run)"
    seen = [f"{crash.count(v)} {v}" for v in VERDICTS if crash.count(v)]
    distinct = f" ({crash.distinct} distinct)" if crash.distinct is not None else ""
    return f"{crash.states} states{distinct}: {', '.join(seen) or 'none judged'}"


def cell_lines(results: list, path: Path) -> str:
    """Each cell's verdict counts and where its states that are not clean were saved."""
    lines = []
    for r in results:
        on = f" on {r.env.kernel}" if r.env and r.env.kernel else ""
        lines.append(f"{r.fs} {r.workload}{on}: {counts(r.crash)}")
        if r.crash and r.crash.artifacts:
            lines.append(f"  artifacts: {r.crash.artifacts}")
        if r.error:
            lines.append(f"  error: {r.error}")
    return "\n".join(lines + [f"results: {path}"])


def held_for(case, mode: str):
    """The case's [expect] table reduced to `mode`, or None when it expects nothing of it."""
    held = replace(case, unsafe=tuple(m for m in case.unsafe if m == mode),
                   safe=tuple(m for m in case.safe if m == mode),
                   verdicts=tuple((m, v) for m, v in case.verdicts if m == mode))
    return held if held.unsafe or held.safe or held.verdicts else None


def kernel_states(names: list, finished, harness: str | None) -> dict:
    """Per kernel name: None when its run ended, else (outcome, message): the kernel the harness
    failed on is an error, the kernels after it were not run."""
    states, failed_on = {}, None
    for name in names:
        if name in finished:
            states[name] = None
        elif failed_on is None:
            failed_on = name
            states[name] = ("error", f"harness failure (not a verdict): {harness or 'the run stopped'}")
        else:
            states[name] = ("skipped", f"not run: the case stopped at a harness failure on {failed_on}")
    return states


def mode_test(test: JUnitCase, held, cells: list, done: dict, results: Path, stopped, no_crash: bool) -> JUnitCase:
    """One mode on one kernel: its cells' results (`done`: key -> CellResult) against `held`."""
    from plugpull.runs.cases import expectation_failures

    mine = [done[c.key()] for c in cells if c.key() in done]
    test = replace(test, out=cell_lines(mine, results), seconds=sum(r.seconds or 0 for r in mine))
    errors = [r.error for r in mine if r.error]
    if errors:
        return test.became("error", errors[0], test.out)
    if len(mine) < len(cells):
        outcome, message = stopped or ("skipped", f"not run: {len(cells) - len(mine)} of its cells are not in {results}")
        return test.became(outcome, message)
    if held is None:
        return test
    if no_crash:
        return test.became("skipped", "--no-crash: [expect] is about crash states, and none were checked")
    failures = expectation_failures(held, mine)
    if failures:
        return test.became("failure", "; ".join(failures), "\n".join(failures) + "\n" + test.out)
    return test


def fault_test(test: JUnitCase, case, runs, results: Path, stopped) -> JUnitCase:
    """The [faults] runs on one kernel (None: not run) against [[expect.faults]]."""
    from plugpull.runs.faultcase import fault_expectation_failures

    if runs is None:
        return test.became(*stopped)
    seen = Counter(r.verdict for r in runs)
    out = f"{len(runs)} fault runs: {', '.join(f'{n} {v}' for v, n in seen.items()) or 'none'}\nresults: {results}"
    test = replace(test, out=out, seconds=sum(r.seconds or 0 for r in runs))
    broken = [r for r in runs if r.verdict == "infra-error"]
    if broken:
        return test.became("error", f"{broken[0].fs} {broken[0].fault}: {broken[0].reason}", out)
    failures = fault_expectation_failures(case.faults.expect, runs)
    if failures:
        return test.became("failure", "; ".join(failures), "\n".join(failures) + "\n" + out)
    return test


def matrix_tests(case, kernels: list, finished: dict, harness: str | None, results: Path,
                 no_crash: bool = False) -> list:
    """A [matrix]/[faults] case: `kernels` [(name, release tag)] in run order; `finished`:
    kernel name -> its fault runs, for each kernel whose run ended; `harness`: what stopped
    the case, if something did."""
    from plugpull.results import read_cells
    from plugpull.runs.matrix import for_kernel

    done = {cell.key: cell for cell in read_cells(results)[0]}
    states = kernel_states([name for name, _ in kernels], finished, harness)
    tests = []
    for name, tag in kernels:
        held, todo = case.expected_on(name), for_kernel(list(case.cells), tag)
        for mode in dict.fromkeys(c.mode for c in todo):
            tests.append(mode_test(JUnitCase(case.path.stem, f"{mode} [{name}]"), held_for(held, mode),
                                   [c for c in todo if c.mode == mode], done, results, states[name], no_crash))
        if case.faults:
            tests.append(fault_test(JUnitCase(case.path.stem, f"faults [{name}]"), case, finished.get(name), results,
                                    states[name]))
    return tests


def replay_tests(case, names: list, finished: dict, harness: str | None) -> list:
    """A [replay] case: its one kept state rechecked on each kernel (`finished`: kernel name ->
    `replay`'s answer)."""
    from os.path import relpath
    from plugpull.runs.cases import replay_failures

    states = kernel_states(names, finished, harness)
    tests = []
    for name in names:
        test = JUnitCase(case.path.stem, f"{case.replay.mode} [{name}]")
        r = finished.get(name)
        if r is None:
            tests.append(test.became(*states[name]))
            continue
        differs = r["digest_expected"] and r["digest"] != r["digest_expected"]
        test = replace(test, out=f"1 state: {r['verdict']}: {r['reason']}\nimage {r['digest']}\n"
                                 f"artifact: {relpath(case.replay.record)} ({case.replay.describe()})")
        failures = replay_failures(case.expected_on(name), r["verdict"])
        failures += ["the rebuilt state differs from the kept one"] if differs else []
        if r["verdict"] == "infra-error":
            test = test.became("error", r["reason"], test.out)
        elif failures:
            test = test.became("failure", "; ".join(failures), "\n".join(failures) + "\n" + test.out)
        tests.append(test)
    return tests


def case_suite(case, kernels: list, finished: dict, harness: str | None, results: Path | None,
               no_crash: bool = False) -> JUnitSuite:
    """The case's testsuite, named by its file; its title and source as properties. A harness
    failure after every kernel's run (the report, say) is an error of its own."""
    if case.replay:
        tests = replay_tests(case, [name for name, _ in kernels], finished, harness)
    else:
        tests = matrix_tests(case, kernels, finished, harness, results, no_crash)
    if harness and all(name in finished for name, _ in kernels):  # after every kernel's run
        tests.append(JUnitCase(case.path.stem, "after the run", "error", f"harness failure (not a verdict): {harness}"))
    return JUnitSuite(case.path.stem, tuple(tests), (("title", case.title), ("source", case.source),
                                                ("file", str(case.path))))
