"""The fault runs behind the fault tables' counts: `faults.html`, a section per table row and
verdict (other than clean), each run with what the application was told and what dm-flakey
did. A fault run keeps its evidence in the results line itself, so the page needs no
artifacts and the report directory stays whole."""

from dataclasses import dataclass

from plugpull.report.faults import PAGE, fault_anchor
from plugpull.results import FaultResult, param_text
from plugpull.results.faults import FAULT_VERDICTS

LISTED = tuple(v for v in FAULT_VERDICTS if v != "clean")


@dataclass(frozen=True)
class FaultSection:
    anchor: str
    title: str
    verdict: str
    runs: tuple[FaultResult, ...]


def fault_sections(runs: list[FaultResult]) -> list[FaultSection]:
    """A section per row of the fault tables (workload, parameters, fs, fault) and verdict
    that is not clean, in the tables' order."""
    rows: dict[tuple, list[FaultResult]] = {}
    for run in runs:
        rows.setdefault((run.workload, run.params, run.fs, run.fault), []).append(run)
    out = []
    for (workload, params, fs, fault), group in rows.items():
        shown = " ".join(f"{k}={param_text(v)}" for k, v in params)
        for verdict in LISTED:
            these = tuple(r for r in group if r.verdict == verdict)
            if these:
                title = f"{workload}{f' ({shown})' if shown else ''}, {fs}, {fault}"
                out.append(FaultSection(fault_anchor(these[0]), title, verdict, these))
    return out


def _told(run: FaultResult) -> list[tuple[str, str]]:
    told = run.told or {}
    acks = told.get("acks") or []
    listed = ", ".join(map(str, acks[:40])) + (" ..." if len(acks) > 40 else "")
    facts = [("acknowledged", f"{len(acks)} (acks {listed})" if acks else "none")]
    if run.errors:
        facts.append(("errors told", "; ".join(f"op {op}: {call} {name}" for op, call, name in run.errors)))
    if told.get("wrong"):
        facts.append(("wrong reads", "; ".join(map(str, told["wrong"]))))
    if told.get("exit_code") is not None:
        facts.append(("exit code", str(told["exit_code"])))
    return facts


def run_facts(run: FaultResult) -> list[tuple[str, str]]:
    """What the page shows of a run, as (label, text), the empty ones left out."""
    switched = ", ".join(f"{what} at {float(when):.1f} s" for when, what in run.switched
                         if isinstance(when, (int, float)))
    power = "; ".join(f"{model} " + " ".join(f"{v}:{n}" for v, n in sorted(verdicts.items()))
                      for model, verdicts in run.power_loss.items() if isinstance(verdicts, dict))
    facts = [("run", run.key), ("reason", run.reason), *_told(run), ("dm table", run.table),
             ("dm status", run.status), ("switched", switched), ("shutdown", run.shutdown),
             ("version after", "" if run.version_after is None else str(run.version_after)),
             ("corruption", run.corruption), ("corruption evidence", run.corruption_evidence),
             ("after power loss", power), ("kernel", run.kernel or "")]
    return [(label, text) for label, text in facts if text]


def fault_page(runs: list[FaultResult], templates) -> tuple[str, str] | None:
    """(the page's file name, its HTML), or None when every run was clean."""
    sections = fault_sections(runs)
    if not sections:
        return None
    page = [(s, [run_facts(r) for r in s.runs]) for s in sections]
    return PAGE, templates.get_template("faults.html.j2").render(sections=page)
