"""A generated workload as the program the guest runs: a POSIX sh script for busybox sh, with
xfs_io for writes (`-d`: O_DIRECT), fallocate and mmap writes (`mmap`, `mwrite`, `msync -s`:
msync(MS_SYNC)), `pp-xattr` (images/src/pp-xattr.c) for xattrs, btrfs-progs' `btrfs` for
snapshots and busybox `sync` for the persistence points (`sync FILE` is fsync, `sync -d FILE`
fdatasync, `sync` sync(2)). It runs as
`--workload script:` scripts do: in the empty work directory of a fresh filesystem, with fd 4
open on the ack port. After the setup (and its sync, unless the setup is unsynced) it prints
`ack 0`; after persistence point k completes, `ack k`. After each ack it waits until the host
sends that line back (`pp_acked`): the host stamps an ack with the write log's size before it
echoes it, so no write of the workload after the point can come before the ack's stamp, even
when the host's reader ran late (a stamp at the log's end would leave the point uncut). Where
nothing comes back (fd 4 on a file, /dev/null), the read ends at once and the program goes on.

`op_command` is the one table of the operations' shell commands: the reproducer's scripts
(plugpull/reproducer/steps.py) use it too, with their own `Tools`."""

from dataclasses import dataclass

from plugpull.generate.ops import EOF_FALLOCS, FALLOCS, INITIAL_SIZE, SETUP_BYTE, SHIFTS, SIZE_FAMILIES, \
    TRUNCATE_TO, XATTR, Op, Persist, fill_byte, plain, sibling, write_range
from plugpull.generate.again import AGAIN_COMMAND
from plugpull.generate.setups import NOTHING, Made, link_loop, quota_line, xattr_loop
from plugpull.generate.reach import EVICT_COMMAND, REFLINKS
from plugpull.generate.holes import FAMILY as HOLES, hole_command
from plugpull.generate.prealloc import FAMILY as PREALLOC, prealloc_command
from plugpull.generate.clonehole import FAMILY as CLONE_HOLE, QUOTA, clone_hole_command
from plugpull.generate.selfclone import SELF_FAMILIES, self_clone_args
from plugpull.generate.sizes import sized_commands
from plugpull.generate.snapshot import FAMILY as SNAPSHOT, snapshot_command
from plugpull.generate.space import Workload
from plugpull.generate.tmpfile import FAMILY as TMPFILE, tmpfile_command
from plugpull.generate.unlinked import OPEN_POINTS, held_point, open_and_unlink
from plugpull.generate.tree import BLOCK, FOO, Tree


@dataclass(frozen=True)
class Tools:
    """How a script spells its programs and its files: the guest program names files relative
    to the work directory and uses busybox and pp-xattr; a reproducer names them under a mount
    point (`mnt`) and uses coreutils and setfattr."""

    mnt: str = ""
    xfs_io: str = "xfs_io"
    setfattr: str = ""  # "": pp-xattr
    unlink: str = "unlink"

    def at(self, path: str) -> str:
        return f"{self.mnt}/{path}" if self.mnt else path

    @property
    def subvolume(self) -> str:
        """The root subvolume, what a snapshot is of: the mount point (the guest program's work
        directory is a directory in it)."""
        return self.mnt or ".."

    def setxattr(self, path: str, value: str, name: str = XATTR) -> str:
        if not self.setfattr:
            return f"pp-xattr set {path} {name} {value}"
        return f"{self.setfattr} -n {name} -v {value} {path}"

    def removexattr(self, path: str) -> str:
        return f"pp-xattr remove {path} {XATTR}" if not self.setfattr else f"{self.setfattr} -x {XATTR} {path}"


GUEST = Tools()


# xfs_io's steps on one file, by family: (variant, the file as the script names it, the step's
# fill byte, the file's size) -> (xfs_io's options, whether it may fail as a fallocate does)
FILE_STEPS = {HOLES: hole_command, PREALLOC: prealloc_command, CLONE_HOLE: clone_hole_command}


def op_command(op: Op, step: int, before: Tree, t: Tools = GUEST, msync: str = "",
               refused: bool = False) -> str:
    """The shell command for `op`, operation number `step`, on the tree `before` it; `msync`:
    the msync point after an mmap write (`msync`, or a ranged one), which only the same process
    can do;
    `refused`: the filesystem refuses it (EOPNOTSUPP), and the workload goes on without it."""
    op = plain(op)
    args = [t.at(a) for a in op.args]
    if op.family in ("falloc", "falloc-eof", *SHIFTS):
        return _range_command(op, len(before.inode(op.args[0]).data), t, args[0], refused)
    if op.family in ("reflink", "copy", *SELF_FAMILIES):
        return _clone_command(op, t, args, refused, len(before.inode(op.args[0]).data))
    if op.family == SNAPSHOT:
        return snapshot_command(op.variant, args[0], t.subvolume, refused)
    if op.family == TMPFILE:
        return tmpfile_command(t.xfs_io, args[0], fill_byte(step))
    if op.family in SIZE_FAMILIES:
        size = len(before.inode(op.args[0]).data)
        commands, fallocate = sized_commands(op.family, op.variant, fill_byte(step), size, msync)
        call = f"{t.xfs_io} " + " ".join(f'-c "{c}"' for c in commands) + f" {args[0]}"
        return _silent(call, refused) if fallocate else call
    if op.family in FILE_STEPS:
        options, fallocate = FILE_STEPS[op.family](op.variant, args[0], fill_byte(step),
                                                   len(before.inode(op.args[0]).data))
        call = f"{t.xfs_io} {options} {args[0]}"
        return _silent(call, refused) if fallocate else call
    if op.family == QUOTA:
        return quota_line(t.subvolume, refused)
    if op.family in ("write", "dwrite", "mmapwrite"):
        size = len(before.inode(op.args[0]).data)
        offset, length = write_range(op, size)
        if op.family == "mmapwrite":
            return _mmap_write(t, args[0], size, offset, length, fill_byte(step), msync)
        direct = " -d" if op.family == "dwrite" else ""
        return f'{t.xfs_io}{direct} -c "pwrite -q -S {fill_byte(step):#04x} {offset} {length}" {args[0]}'
    simple = {
        "creat": lambda: f"touch {args[0]}",
        "mkdir": lambda: f"mkdir {args[0]}",
        "truncate": lambda: f'{t.xfs_io} -c "truncate {TRUNCATE_TO}" {args[0]}',
        "link": lambda: f"ln {args[0]} {args[1]}",
        "unlink": lambda: f"{t.unlink} {args[0]}",
        "unlink-open": lambda: open_and_unlink(args[0], t.unlink),
        "rmdir": lambda: f"rmdir {args[0]}",
        "symlink": lambda: f"ln -s {sibling(op.args[0])} {args[0]}",
        "rename": lambda: f"mv -fT {args[0]} {args[1]}",
        "setxattr": lambda: t.setxattr(args[0], f"v{step}"),
        "removexattr": lambda: t.removexattr(args[0]),
        "evict": lambda: EVICT_COMMAND,
        "again": lambda: AGAIN_COMMAND,
    }
    return simple[op.family]()


def _mmap_write(t: Tools, path: str, size: int, offset: int, length: int, fill: int, msync: str) -> str:
    """A range past the end is first made part of the file by ftruncate (xfs_io `truncate`), then
    the whole file is mapped shared and written through the mapping."""
    end = max(size, offset + length)
    cmds = ([f"truncate {end}"] if end > size else []) + [f"mmap -w 0 {end}", f"mwrite -S {fill:#04x} {offset} {length}"]
    cmds += [f"msync -s 0 {end}"] if msync else []
    return f"{t.xfs_io} " + " ".join(f'-c "{c}"' for c in cmds) + f" {path}"


REFUSAL = "Operation not supported"  # strerror(EOPNOTSUPP), which xfs_io prints


def _range_command(op: Op, size: int, t: Tools, path: str, refused: bool) -> str:
    """A fallocate (of the first table, or at the end of the file), or collapse or insert range,
    through xfs_io, whose exit code does not always say that the call failed (`fzero`'s does
    not): anything it prints is a failure, but where the filesystem refuses the operation
    (`refused`), which is then the operation not done and nothing else; a refused operation
    that was done fails too."""
    if op.family == "falloc":
        call = f'{t.xfs_io} -c "{FALLOCS[op.variant]}" {path}'
    elif op.family == "falloc-eof":
        command, length, _ = EOF_FALLOCS[op.variant]
        call = f'{t.xfs_io} -c "{command} {size} {length}" {path}'
    else:
        call = f'{t.xfs_io} -c "{SHIFTS[op.family]} {BLOCK} {BLOCK}" {path}'
    return _silent(call, refused)


def _clone_command(op: Op, t: Tools, args: list[str], refused: bool, size: int) -> str:
    """reflink (FICLONE, FICLONERANGE) or copy_file_range of args[0] into args[1], or a block of
    args[0] onto another range of it (`self-clone`, on a file of `size` bytes), through xfs_io,
    which says a failed clone and still exits 0: checked as a fallocate is."""
    if op.family in SELF_FAMILIES:
        return _silent(f'{t.xfs_io} -c "reflink -q {args[0]} {self_clone_args(op.variant, size)}" {args[0]}', refused)
    src, dst = args
    if op.family == "copy":
        return _silent(f'{t.xfs_io} -c "copy_range {src}" {dst}', refused)
    return _silent(f'{t.xfs_io} -c "reflink -q {src}{REFLINKS[op.variant]}" {dst}', refused)


def _silent(call: str, refused: bool) -> str:
    """`call`, which prints nothing when it works: anything it prints fails the program, but
    where the filesystem refuses the operation (`refused`), which must then be the refusal."""
    if refused:
        return (f'pp_said=$({call} 2>&1) || :; case $pp_said in *"{REFUSAL}"*) ;; '
                f'*) echo "not refused: $pp_said" >&2; false;; esac  # EOPNOTSUPP here: not done')
    return f'pp_said=$({call} 2>&1) && [ -z "$pp_said" ] || {{ echo "$pp_said" >&2; false; }}'


def step_command(workload: Workload, i: int, t: Tools = GUEST) -> str:
    """Operation number `i` of `workload` (1-based), with the msync that follows it if any."""
    step = workload.steps[i - 1]
    msync = step.persist.kind if step.persist is not None and step.persist.call == "msync" else ""
    return op_command(step.op, i, workload.trees[i - 1], t, msync, workload.refuses(step.op))


def persist_command(persist: Persist) -> str | None:
    """The guest's command for a persistence point; None for msync, which the operation's own
    command did."""
    if persist.call == "msync":
        return None
    if persist.call == "sync":
        return "sync"
    syncer = "sync -d" if persist.call == "fdatasync" else "sync"
    return held_point(syncer) if persist.kind in OPEN_POINTS else f"{syncer} {persist.path}"


def setup_lines(names, t: Tools = GUEST, made: Made = NOTHING) -> list[str]:
    """The setup's names made, and what it `made` of A/foo: more links to it
    (`setups.link_loop`), xattrs on it (`setups.xattr_loop`), or it a fifo."""
    lines = []
    for path in names:
        if made.fifo and path == FOO:
            lines.append(f"mkfifo {t.at(path)}")
        elif path in SETUP_BYTE:
            lines.append(f'{t.xfs_io} -f -c "pwrite -q -S {SETUP_BYTE[path]:#04x} 0 {INITIAL_SIZE}" {t.at(path)}')
        else:
            lines.append(f"mkdir {t.at(path)}")
    lines += link_loop(made.links, t.at) if made.links else []
    return lines + (xattr_loop(made.xattrs, t.at, t.setxattr) if made.xattrs else [])


ACKED = ('pp_acked() { echo "ack $1" >&4; while read -r pp_echo <&4; do [ "$pp_echo" = "ack $1" ] && return 0; done; return 0; }'
         "  # the ack, then its echo: the host has stamped it")


def setup_block(workload: Workload, t: Tools = GUEST) -> list[str]:
    if workload.synced:
        quota = [quota_line(t.subvolume, "quota" in workload.refused)] if workload.extra == "quota" else []
        made = setup_lines(workload.setup, t, workload.made)
        return ["# setup, made durable: ack 0", *quota, *made, "sync", "pp_acked 0"]
    return ["# setup, not synced (in the same transaction as the operations): ack 0 owes nothing",
            *setup_lines(workload.setup, t), "pp_acked 0"]


def program(workload: Workload) -> str:
    """The workload's guest script."""
    lines = [f"# plugpull generated workload {workload.ident}: {workload.text()}",
             "# run in the empty work directory of a fresh filesystem, fd 4 open on the ack port",
             "set -e", ACKED, *setup_block(workload)]
    point = 0
    for i, step in enumerate(workload.steps, 1):
        lines.append(f"# {i}: {step.op.text()}")
        lines.append(step_command(workload, i))
        if step.persist:
            point += 1
            command = persist_command(step.persist)
            said = f"point {point}: {step.persist.text()}"
            lines += [f"{command}  # {said}" if command else f"# {said}, done by the command above",
                      f"pp_acked {point}"]
    return "\n".join(lines) + "\n"
