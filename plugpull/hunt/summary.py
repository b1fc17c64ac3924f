"""What a hunt found: per workload, the rules its states broke; for the hunt, the failing
workloads grouped by rule (summary.txt).

A rule is the model oracle's (fsync-data, sync-all... named in each lost fact's reason), or
one of the checks beside it: `inconsistent` (a tree no point of the workload gives), `fsck`
(the filesystem's checker found damage), `mount` (recovery failed) and `kernel` (the guest
kernel failed while recording or checking).
"""

import re
from collections import Counter

from plugpull.check.verdict import Verdict

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
            "seconds": round(seconds, 3)}


def summary(settings: dict, lines: list[dict], total: int) -> str:
    """The hunt so far, as text: counts, verdicts, and the failing workloads by rule."""
    verdicts = Counter()
    for line in lines:
        verdicts.update(line["verdicts"])
    states = sum(line["states"] for line in lines)
    distinct = sum(line["distinct"] for line in lines)
    failing = [line for line in lines if line["failing"]]
    head = (f"hunt: seq {settings['seq']}{_filters(settings)} on {settings['fs']} ({settings['mode']}), "
            f"kernel {settings['kernel']}: {len(lines)} of {total} workloads, {states} states "
            f"({distinct} distinct), {len(failing)} failing")
    out = [head, "verdicts: " + (", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())) or "none")]
    by_rule: dict[str, list[dict]] = {}
    for line in failing:
        for rule in line["rules"]:
            by_rule.setdefault(rule, []).append(line)
    if by_rule:
        out.append("failing workloads by rule:")
    for rule, members in sorted(by_rule.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        out.append(f"  {rule}: {len(members)} workload{'s' if len(members) != 1 else ''}")
        out += [f"    {m['id']}  {m['ops']}  ({m['rules'][rule]} states)  {m['artifact'] or ''}".rstrip()
                for m in sorted(members, key=lambda m: m["id"])]
    return "\n".join(out) + "\n"


def _filters(settings: dict) -> str:
    parts = []
    if settings.get("ops"):
        parts.append(f"ops {','.join(settings['ops'])}")
    if settings.get("sample"):
        parts.append(f"sample {settings['sample']} seed {settings['seed']}")
    return f" ({'; '.join(parts)})" if parts else ""
