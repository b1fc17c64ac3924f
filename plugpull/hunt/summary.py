"""What a hunt found: per workload, the rules its states broke and what they lost
(`findings.damage`); for the hunt, the failing workloads grouped into findings (summary.txt).

A rule is the model oracle's (fsync-data, sync-all... named in each lost fact's reason), or
one of the checks beside it: `inconsistent` (a tree no point of the workload gives), `fsck`
(the filesystem's checker found damage), `mount` (recovery failed) and `kernel` (the guest
kernel failed while recording or checking).
"""

from collections import Counter
from pathlib import Path

from plugpull.check.verdict import Verdict
from plugpull.files import atomic_write
from plugpull.hunt.findings import Finding, damage, families, findings
from plugpull.hunt.rules import CHECK_RULES, rules_broken
from plugpull.hunt.journal import TABLE, kernels_of, line_kernel

FAILING = (str(Verdict.DATA_LOSS), *CHECK_RULES)

COUNTED = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
           "thirteen", "fourteen", "fifteen", "sixteen")  # a hunt of fewer tables than a new one takes says how many


def workload_line(ident: str, text: str, results: list, artifact: str | None, seconds: float) -> dict:
    """A journal line: the workload's verdict counts, and per rule how many states broke it."""
    verdicts = Counter(r.verdict for r in results)
    rules = Counter(rule for r in results for rule in rules_broken(r.verdict, r.lost))
    bad = [r for r in results if r.verdict in FAILING]
    return {"id": ident, "ops": text, "states": len(results), "distinct": len({r.distinct for r in results}),
            "verdicts": dict(sorted(verdicts.items())), "rules": dict(sorted(rules.items())),
            "failing": bool(bad), "reason": bad[0].reason if bad else "", "artifact": artifact,
            "seconds": round(seconds, 3), **damage(bad)}


def write_summary(run, out: Path) -> str:
    """summary.txt of a `HuntRun` (its lines: every workload the journal holds), written whole;
    returns its text."""
    text = summary(run.settings, run.lines, run.total, out)
    atomic_write(out / "summary.txt", text)
    return text


def summary(settings: dict, lines: list[dict], total: int, out: Path | None = None) -> str:
    """The hunt so far, as text: counts, verdicts, and the failing workloads as findings
    (`out`: the hunt's directory, where an older journal's saved states are read). A hunt of
    several kernels adds a line per kernel and which kernels each failing workload fails on."""
    kernels = kernels_of(settings)
    verdicts = Counter()
    for line in lines:
        verdicts.update(line["verdicts"])
    failing = [line for line in lines if line["failing"]]
    where = (f"hunt: seq {settings['seq']}{shape_text(settings)}{_filters(settings)} on {settings['fs']} "
             f"({settings['mode']})")
    if len(kernels) > 1:
        text = [f"{where}, kernels {', '.join(kernels)}: {len(lines)} of {total} workload runs "
                f"({total // len(kernels)} workloads on each), {_counts(lines)}, "
                f"{len({line['id'] for line in failing})} failing on one kernel or more"]
        text += [f"  on {k}: {_per_kernel(lines, settings, k, total // len(kernels))}" for k in kernels]
    else:
        text = [f"{where}, kernel {kernels[0] if kernels else '?'}: {len(lines)} of {total} workloads, "
                f"{_counts(lines)}, {len(failing)} failing"]
    text.append("verdicts: " + (", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())) or "none"))
    if "fsck" in settings:
        text.append(fsck_text(settings["fsck"], lines))
    if len(kernels) > 1:
        text += by_kernels(lines, settings)
    found = findings(lines, settings, out)
    if found:
        text.append(findings_head(found, failing))
    family_of = {f.signature.family: (n, len(group)) for n, group in enumerate(families(found), 1) for f in group}
    for number, f in enumerate(found, 1):
        text += finding_text(number, f, *family_of[f.signature.family], several=len(kernels) > 1)
    return "\n".join(text) + "\n"


def fsck_text(choice: str, lines: list[dict]) -> str:
    """How many distinct states the host's fsck read, under a `--fsck` other than `always`."""
    read, distinct = sum(line.get("fscked", 0) for line in lines), sum(line["distinct"] for line in lines)
    return (f"fsck ({choice}): read {read} of {distinct} distinct states; a state it did not read is clean "
            f"as far as the mount and the oracle see, not checked by fsck")


def _counts(lines: list[dict]) -> str:
    states, distinct = sum(line["states"] for line in lines), sum(line["distinct"] for line in lines)
    return f"{states} states ({distinct} distinct)"


def _per_kernel(lines: list[dict], settings: dict, kernel: str, workloads: int) -> str:
    these = [line for line in lines if line_kernel(line, settings) == kernel]
    return f"{len(these)} of {workloads} workloads, {_counts(these)}, {sum(line['failing'] for line in these)} failing"


def by_kernels(lines: list[dict], settings: dict, shown: int = 8) -> list[str]:
    """The failing workloads grouped by the kernels they fail on, the kernels they were judged
    clean of a failure on, and those not judged yet: the most kernels first."""
    kernels = kernels_of(settings)
    judged: dict[str, dict[str, bool]] = {}
    for line in lines:
        judged.setdefault(line["id"], {})[line_kernel(line, settings)] = line["failing"]
    groups: dict[tuple, list[str]] = {}
    for ident, on in judged.items():
        if any(on.values()):
            bad = tuple(k for k in kernels if on.get(k) is True)
            good = tuple(k for k in kernels if on.get(k) is False)
            groups.setdefault((bad, good, tuple(k for k in kernels if k not in on)), []).append(ident)
    out = []
    for (bad, good, unjudged), ids in sorted(groups.items(), key=lambda kv: -len(kv[0][0])):
        parts = [f"failing on {', '.join(bad)}"] + ([f"not on {', '.join(good)}"] if good else []) + \
                ([f"not judged yet on {', '.join(unjudged)}"] if unjudged else [])
        more = f" (and {len(ids) - shown} more)" if len(ids) > shown else ""
        out.append(f"{'; '.join(parts)}: {len(ids)} workload{'s' if len(ids) != 1 else ''}: "
                   f"{', '.join(sorted(ids)[:shown])}{more}")
    return out


def findings_head(found: list[Finding], failing: list[dict]) -> str:
    rules = Counter(rule for line in failing for rule in line["rules"])
    by_rule = ", ".join(f"{r} {n}" for r, n in sorted(rules.items(), key=lambda kv: (-kv[1], kv[0])))
    count = len({line["id"] for line in failing})
    workloads = f"{count} failing workload{'s' if count != 1 else ''}"
    return f"findings: {len(found)} from {workloads} (by rule: {by_rule})"


def finding_text(number: int, f: Finding, family: int, in_family: int, several: bool = False) -> list[str]:
    sig, smallest = f.signature, f.representative.line
    out = [f"finding {number}: {f.count} workload{'s' if f.count != 1 else ''}: {sig.shape}",
           f"  what: {sig.kinds_text()} ({', '.join(sig.kinds)})",
           f"  rules: {', '.join(sig.rules)}",
           f"  on: {', '.join(f.filesystems) or '?'}, kernel{'s' if len(f.kernels) > 1 else ''} "
           f"{', '.join(f.kernels) or '?'}",
           f"  smallest: {smallest['id']}  {smallest['ops']}"]
    if in_family > 1:
        out.append(f"  family {family} ({in_family} findings): {sig.act}, the same damage, other names made first")
    if not several:
        return out + [f"    {workload_text(m.line)}" for m in f.workloads]
    grouped: dict[tuple, list[dict]] = {}
    for m in f.workloads:
        grouped.setdefault((m.hunt, m.line["id"]), []).append(m.line)
    return out + [f"    {kernels_text(group)}" for group in grouped.values()]


def states_text(line: dict) -> str:
    bad = sum(n for v, n in line["verdicts"].items() if v in FAILING)
    return f"{bad} of {line['states']} states" if line["states"] else "while recording"


def workload_text(line: dict) -> str:
    return f"{line['id']}  {line['ops']}  ({states_text(line)})  {line.get('artifact') or ''}".rstrip()


def kernels_text(lines: list[dict]) -> str:
    """One workload of a hunt of several kernels: the kernels it fails on in this finding,
    and the directory that holds its artifacts, one per kernel (failing/ID/)."""
    first = lines[0]
    on = ", ".join(f"{line.get('kernel') or '?'} ({states_text(line)})" for line in lines)
    kept = next((line["artifact"] for line in lines if line.get("artifact")), None)
    where = str(Path(kept).parent) + "/" if kept else ""
    return f"{first['id']}  {first['ops']}  on {on}  {where}".rstrip()


def shape_text(settings: dict) -> str:
    """", shape NAME" for a hunt of a shape's workloads; "" for one of a whole --seq space."""
    return f", shape {settings['shape']}" if settings.get("shape") else ""


def _filters(settings: dict) -> str:
    parts = []
    if settings.get("ops"):
        parts.append(f"ops {','.join(settings['ops'])}")
    if settings.get("sample"):
        parts.append(f"sample {settings['sample']} seed {settings['seed']}")
    if settings.get("setup") not in (None, "synced"):
        parts.append(f"setup {settings['setup']}")
    table = settings.get("table")
    if isinstance(table, int) and not isinstance(table, bool) and 1 <= table < TABLE:
        parts.append("the first operation table" if table == 1 else f"the first {COUNTED[table]} operation tables")
    return f" ({'; '.join(parts)})" if parts else ""
