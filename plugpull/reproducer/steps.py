"""A generated workload's operations as plain shell commands on a mounted filesystem: the
guest program's command table (`plugpull.generate.program.op_command`: xfs_io for writes,
direct-I/O and mmap writes, msync, fallocate and truncate, coreutils for the namespace) with
`rm -f` for unlink and setfattr for xattrs; xfs_io for fsync and fdatasync, `sync` for
sync(2). `Tools` names the programs and the mount point as each style spells them (`xfs_io`
and "$mnt" in the sh script, `$XFS_IO_PROG` and `$SCRATCH_MNT` in fstests)."""

from plugpull.generate.ops import Persist
from plugpull.generate.program import Tools, setup_lines as created, step_command
from plugpull.generate.unlinked import OPEN_POINTS, held_point
from plugpull.reproducer import ReproducerCase


def persist_command(persist: Persist, t: Tools) -> str | None:
    """None for msync, which the operation's own command did."""
    if persist.call == "msync":
        return None
    if persist.call == "sync":
        return "sync"
    syncer = f"{t.xfs_io} -c {persist.call}"
    return held_point(syncer) if persist.kind in OPEN_POINTS else f"{syncer} {t.at(persist.path)}"


def setup_lines(case: ReproducerCase, t: Tools) -> list[str]:
    """The workload's setup, then `sync` (the point 0 the reproducer starts from)."""
    if not case.workload.synced:
        return ["# setup, not synced: in the same transaction as the operations (point 0 owes nothing)",
                *created(case.workload.setup, t)]
    return ["# setup, made durable by sync (point 0)", *created(case.workload.setup, t), "sync"]


def op_lines(case: ReproducerCase, t: Tools) -> list[str]:
    """The operations up to the point, each followed by its persistence call if it has one;
    the last line is the chosen point's call (none for point 0)."""
    lines, point = [], 0
    workload = case.workload
    for i, step in enumerate(workload.steps, 1):
        lines.append(f"# {i}: {step.op.text()}")
        lines.append(step_command(workload, i, t))
        if step.persist:
            point += 1
            command = persist_command(step.persist, t)
            lines += [f"# point {point}: {step.persist.text()}", *([command] if command else [])]
    return lines


def needs_setfattr(case: ReproducerCase) -> bool:
    return any(s.op.family in ("setxattr", "removexattr") for s in case.workload.steps)
