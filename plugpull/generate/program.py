"""A generated workload as the program the guest runs: a POSIX sh script for busybox sh, with
xfs_io for writes and fallocate, `pp-xattr` (images/src/pp-xattr.c) for xattrs and busybox
`sync` for the persistence points (`sync FILE` is fsync, `sync -d FILE` fdatasync, `sync`
sync(2)). It runs as `--workload script:` scripts do: in the empty work directory of a fresh
filesystem, with fd 4 open on the ack port. After the setup's sync it prints `ack 0`; after
persistence point k completes, `ack k`."""

from plugpull.generate.ops import FALLOCS, INITIAL_SIZE, SETUP_BYTE, TRUNCATE_TO, WRITES, XATTR, Op, Persist, \
    fill_byte, sibling
from plugpull.generate.space import Workload
from plugpull.generate.tree import Tree


def op_command(op: Op, step: int, before: Tree) -> str:
    """The shell command for `op`, operation number `step`, on the tree `before` it."""
    args = op.args
    if op.family == "write":
        offset_of, length = WRITES[op.variant]
        offset = offset_of(len(before.inode(args[0]).data))
        return f'xfs_io -c "pwrite -q -S {fill_byte(step):#04x} {offset} {length}" {args[0]}'
    simple = {
        "creat": lambda: f"touch {args[0]}",
        "mkdir": lambda: f"mkdir {args[0]}",
        "falloc": lambda: f'xfs_io -c "{FALLOCS[op.variant]}" {args[0]}',
        "truncate": lambda: f'xfs_io -c "truncate {TRUNCATE_TO}" {args[0]}',
        "link": lambda: f"ln {args[0]} {args[1]}",
        "unlink": lambda: f"unlink {args[0]}",
        "symlink": lambda: f"ln -s {sibling(args[0])} {args[0]}",
        "rename": lambda: f"mv -fT {args[0]} {args[1]}",
        "setxattr": lambda: f"pp-xattr set {args[0]} {XATTR} v{step}",
        "removexattr": lambda: f"pp-xattr remove {args[0]} {XATTR}",
    }
    return simple[op.family]()


def persist_command(persist: Persist) -> str:
    if persist.kind == "sync":
        return "sync"
    return f"sync -d {persist.path}" if persist.kind == "fdatasync" else f"sync {persist.path}"


def setup_lines(names) -> list[str]:
    lines = []
    for path in names:
        if path in SETUP_BYTE:
            lines.append(f'xfs_io -f -c "pwrite -q -S {SETUP_BYTE[path]:#04x} 0 {INITIAL_SIZE}" {path}')
        else:
            lines.append(f"mkdir {path}")
    return lines


def program(workload: Workload) -> str:
    """The workload's guest script."""
    lines = [f"# plugpull generated workload {workload.ident}: {workload.text()}",
             "# run in the empty work directory of a fresh filesystem, fd 4 open on the ack port",
             "set -e", "# setup, made durable: ack 0", *setup_lines(workload.setup), "sync", "echo 'ack 0' >&4"]
    point = 0
    for i, step in enumerate(workload.steps, 1):
        lines.append(f"# {i}: {step.op.text()}")
        lines.append(op_command(step.op, i, workload.trees[i - 1]))
        if step.persist:
            point += 1
            lines += [f"{persist_command(step.persist)}  # point {point}: {step.persist.text()}",
                      f"echo 'ack {point}' >&4"]
    return "\n".join(lines) + "\n"
