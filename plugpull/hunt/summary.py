"""What a hunt found: per workload, the rules its states broke and what they lost
(`findings.damage`); for the hunt, the failing workloads grouped into findings (summary.txt).

A rule is the model oracle's (fsync-data, sync-all... named in each lost fact's reason), or
one of the checks beside it: `inconsistent` (a tree no point of the workload gives), `fsck`
(the filesystem's checker found damage), `mount` (recovery failed) and `kernel` (the guest
kernel failed while recording or checking).
"""

import re
from collections import Counter
from pathlib import Path

from plugpull.check.verdict import Verdict
from plugpull.hunt.findings import Finding, damage, families, findings

RULE_IN_REASON = re.compile(r"\(([a-z0-9-]+), point \d+\)")
CHECK_RULES = {
    str(Verdict.INCONSISTENT): "inconsistent",
    str(Verdict.FS_CORRUPT): "fsck",
    str(Verdict.UNMOUNTABLE): "mount",
    str(Verdict.KERNEL_CRASH): "kernel",
}
FAILING = (str(Verdict.DATA_LOSS), *CHECK_RULES)


def rules_broken(verdict: str, lost: list[dict]) -> list[str]:
    """The rules one state broke, from its verdict and its lost facts' reasons."""
    if verdict == str(Verdict.DATA_LOSS):
        return sorted({m.group(1) for item in lost for m in RULE_IN_REASON.finditer(item.get("reason", ""))}
                      or {"data-loss"})
    rule = CHECK_RULES.get(verdict)
    return [rule] if rule else []


def workload_line(ident: str, text: str, results: list, artifact: str | None, seconds: float) -> dict:
    """A journal line: the workload's verdict counts, and per rule how many states broke it."""
    verdicts = Counter(r.verdict for r in results)
    rules = Counter(rule for r in results for rule in rules_broken(r.verdict, r.lost))
    bad = [r for r in results if r.verdict in FAILING]
    return {"id": ident, "ops": text, "states": len(results), "distinct": len({r.distinct for r in results}),
            "verdicts": dict(sorted(verdicts.items())), "rules": dict(sorted(rules.items())),
            "failing": bool(bad), "reason": bad[0].reason if bad else "", "artifact": artifact,
            "seconds": round(seconds, 3), **damage(bad)}


def summary(settings: dict, lines: list[dict], total: int, out: Path | None = None) -> str:
    """The hunt so far, as text: counts, verdicts, and the failing workloads as findings
    (`out`: the hunt's directory, where an older journal's saved states are read)."""
    verdicts = Counter()
    for line in lines:
        verdicts.update(line["verdicts"])
    states = sum(line["states"] for line in lines)
    distinct = sum(line["distinct"] for line in lines)
    failing = [line for line in lines if line["failing"]]
    head = (f"hunt: seq {settings['seq']}{_filters(settings)} on {settings['fs']} ({settings['mode']}), "
            f"kernel {settings['kernel']}: {len(lines)} of {total} workloads, {states} states "
            f"({distinct} distinct), {len(failing)} failing")
    text = [head, "verdicts: " + (", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())) or "none")]
    found = findings(lines, settings, out)
    if found:
        text.append(findings_head(found, failing))
    family_of = {f.signature.family: (n, len(group)) for n, group in enumerate(families(found), 1) for f in group}
    for number, f in enumerate(found, 1):
        text += finding_text(number, f, *family_of[f.signature.family])
    return "\n".join(text) + "\n"


def findings_head(found: list[Finding], failing: list[dict]) -> str:
    rules = Counter(rule for line in failing for rule in line["rules"])
    by_rule = ", ".join(f"{r} {n}" for r, n in sorted(rules.items(), key=lambda kv: (-kv[1], kv[0])))
    workloads = f"{len(failing)} failing workload{'s' if len(failing) != 1 else ''}"
    return f"findings: {len(found)} from {workloads} (by rule: {by_rule})"


def finding_text(number: int, f: Finding, family: int, in_family: int) -> list[str]:
    sig, smallest = f.signature, f.representative.line
    out = [f"finding {number}: {f.count} workload{'s' if f.count != 1 else ''}: {sig.shape}",
           f"  what: {sig.kinds_text()} ({', '.join(sig.kinds)})",
           f"  rules: {', '.join(sig.rules)}",
           f"  on: {', '.join(f.filesystems) or '?'}, kernel {', '.join(f.kernels) or '?'}",
           f"  smallest: {smallest['id']}  {smallest['ops']}"]
    if in_family > 1:
        out.append(f"  family {family} ({in_family} findings): {sig.act}, the same damage, other names made first")
    out += [f"    {workload_text(m.line)}" for m in f.workloads]
    return out


def workload_text(line: dict) -> str:
    bad = sum(n for v, n in line["verdicts"].items() if v in FAILING)
    states = f"{bad} of {line['states']} states" if line["states"] else "while recording"
    return f"{line['id']}  {line['ops']}  ({states})  {line.get('artifact') or ''}".rstrip()


def _filters(settings: dict) -> str:
    parts = []
    if settings.get("ops"):
        parts.append(f"ops {','.join(settings['ops'])}")
    if settings.get("sample"):
        parts.append(f"sample {settings['sample']} seed {settings['seed']}")
    return f" ({'; '.join(parts)})" if parts else ""
