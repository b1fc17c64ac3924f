"""The rules one state broke: the model oracle's (fsync-data, sync-all... named in each lost
fact's reason), or the check beside it that its verdict names (`inconsistent`, `fsck`,
`mount`, `kernel`)."""

import re

from plugpull.check.verdict import Verdict

RULE_IN_REASON = re.compile(r"\(([a-z0-9-]+), point \d+\)")
CHECK_RULES = {
    str(Verdict.INCONSISTENT): "inconsistent",
    str(Verdict.FS_CORRUPT): "fsck",
    str(Verdict.NOT_WRITABLE): "create",
    str(Verdict.UNMOUNTABLE): "mount",
    str(Verdict.KERNEL_CRASH): "kernel",
}


def rules_broken(verdict: str, lost: list[dict]) -> list[str]:
    """The rules one state broke, from its verdict and its lost facts' reasons."""
    if verdict == str(Verdict.DATA_LOSS):
        return sorted({m.group(1) for item in lost if isinstance(item, dict)
                       for m in RULE_IN_REASON.finditer(str(item.get("reason", "")))} or {"data-loss"})
    rule = CHECK_RULES.get(verdict)
    return [rule] if rule else []
