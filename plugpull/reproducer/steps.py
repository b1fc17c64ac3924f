"""A generated workload's operations as plain shell commands on a mounted filesystem: xfs_io
for writes, fallocate, truncate and the persistence calls (fsync, fdatasync), coreutils for
the namespace, setfattr for xattrs, `sync` for sync(2). `Tools` names the programs and the
mount point as each style spells them (`xfs_io` and "$mnt" in the sh script, `$XFS_IO_PROG`
and `$SCRATCH_MNT` in fstests)."""

from dataclasses import dataclass

from plugpull.generate.ops import FALLOCS, INITIAL_SIZE, SETUP_BYTE, TRUNCATE_TO, WRITES, XATTR, Op, Persist, \
    fill_byte, sibling
from plugpull.generate.tree import Tree
from plugpull.reproducer import Case


@dataclass(frozen=True)
class Tools:
    mnt: str
    xfs_io: str
    setfattr: str

    def at(self, path: str) -> str:
        return f"{self.mnt}/{path}"


def op_command(op: Op, step: int, before: Tree, t: Tools) -> str:
    """The command for `op`, the workload's operation number `step`, on the tree `before` it."""
    args = [t.at(a) for a in op.args]
    if op.family == "write":
        offset_of, length = WRITES[op.variant]
        offset = offset_of(len(before.inode(op.args[0]).data))
        return f'{t.xfs_io} -c "pwrite -q -S {fill_byte(step):#04x} {offset} {length}" {args[0]}'
    simple = {
        "creat": lambda: f"touch {args[0]}",
        "mkdir": lambda: f"mkdir {args[0]}",
        "falloc": lambda: f'{t.xfs_io} -c "{FALLOCS[op.variant]}" {args[0]}',
        "truncate": lambda: f'{t.xfs_io} -c "truncate {TRUNCATE_TO}" {args[0]}',
        "link": lambda: f"ln {args[0]} {args[1]}",
        "unlink": lambda: f"rm -f {args[0]}",
        "symlink": lambda: f"ln -s {sibling(op.args[0])} {args[0]}",
        "rename": lambda: f"mv -fT {args[0]} {args[1]}",
        "setxattr": lambda: f"{t.setfattr} -n {XATTR} -v v{step} {args[0]}",
        "removexattr": lambda: f"{t.setfattr} -x {XATTR} {args[0]}",
    }
    return simple[op.family]()


def persist_command(persist: Persist, t: Tools) -> str:
    if persist.kind == "sync":
        return "sync"
    return f"{t.xfs_io} -c {persist.kind} {t.at(persist.path)}"


def setup_lines(case: Case, t: Tools) -> list[str]:
    """The workload's setup, then `sync` (the point 0 the reproducer starts from)."""
    lines = ["# setup, made durable by sync (point 0)"]
    for path in case.workload.setup:
        if path in SETUP_BYTE:
            lines.append(f'{t.xfs_io} -f -c "pwrite -q -S {SETUP_BYTE[path]:#04x} 0 {INITIAL_SIZE}" {t.at(path)}')
        else:
            lines.append(f"mkdir {t.at(path)}")
    return lines + ["sync"]


def op_lines(case: Case, t: Tools) -> list[str]:
    """The operations up to the point, each followed by its persistence call if it has one;
    the last line is the chosen point's call (none for point 0)."""
    lines, point = [], 0
    workload = case.workload
    for i, step in enumerate(workload.steps, 1):
        lines.append(f"# {i}: {step.op.text()}")
        lines.append(op_command(step.op, i, workload.trees[i - 1], t))
        if step.persist:
            point += 1
            lines += [f"# point {point}: {step.persist.text()}", persist_command(step.persist, t)]
    return lines


def needs_setfattr(case: Case) -> bool:
    return any(s.op.family in ("setxattr", "removexattr") for s in case.workload.steps)
