"""The setups a workload may have (`--setup`): synced (ack 0 after a sync), unsynced (ids
`seqNu-...`: the setup in the same transaction as the operations), and four synced ones with
something more, or other, before the sync (a workload's `extra`):

- links (ids `seqNl-...`, `seq6l.links-...`): `MANY` more hard links to A/foo in its
  directory, named as fstests' generic/040 and generic/041 name theirs (`foo_link_1` ...). Past
  a few hundred names of one inode in one directory btrfs keeps them in extended inode refs,
  which those tests are about.
- xattrs (ids `seqNx-...`): `XATTRS` user xattrs on A/foo, named and valued as fstests'
  generic/745 names them (`user.attr_0001` = `val_0001` ...): short, so that the names list in
  about 30 KiB (under the kernel's 64 KiB for one listxattr) while the items still fill several
  btrfs leaves of any node size, which that test needs. ext4 and f2fs keep an inode's xattrs
  in one block and refuse so many (ENOSPC): there the setup makes none (`oracle.REFUSED`).
- quota (ids `seqNq-...`): btrfs quotas enabled on the filesystem (`btrfs quota enable`) before
  the setup's names, as btrfs/119 does; quotas owe nothing of names or data, so the model is
  the synced setup's. Every other filesystem refuses it: the program runs the command, which
  must fail there, and goes on.
- fifo (ids `seqNf-...`): A/foo made a fifo (mkfifo) instead of a regular file, a special
  inode of no data (fstests generic/479 links one and fsyncs another file). Every operation that
  opens it, writes it or sets its xattrs is invalid with it (`ops.Sim` takes only regular files
  there), and so is one the filesystem refuses that names it (it still runs, to be refused, and
  a fifo refuses it otherwise: fallocate on a pipe is ESPIPE, a clone's open of one waits for a
  writer), and so is a point that names it (its fsync would open it: a fifo's open waits for the
  other end, and fsync of one is EINVAL): the guest never opens it. Every filesystem has fifos.

The links, xattrs and fifo are made only where the setup makes A/foo (a workload that creates
it, or never names it, has none) and every step is valid with them (else the workload has none:
`rmdir A` after `unlink A/foo`, which the links keep from being empty; `unlink-open A/foo`,
which needs the last name; a write of A/foo, with the fifo): so each space's workloads,
counts and ids are those of the synced setup, and only the setup differs. What they make is in
the setup tree: the oracle owes it (the names, the link count, the xattrs, the fifo's kind) as
it owes everything synced."""

from dataclasses import dataclass

from plugpull.generate.ops import INITIAL_SIZE, SETUP_BYTE, Sim, apply
from plugpull.generate.tree import DIR, FIFO, FILE, FOO, Inode, Tree

MANY = 3000  # as generic/040 and 041 make: well past where btrfs's refs spill into extrefs
XATTRS = 2000  # as generic/745 makes: at least three btree leaves of xattr items at any node size
MARKS = {"synced": "", "unsynced": "u", "links": "l", "xattrs": "x", "quota": "q", "fifo": "f"}  # marks in ids
EXTRAS = ("links", "xattrs", "quota", "fifo")  # the synced setups with more (or other) before the sync
QUOTA = "btrfs quota enable {root}"


@dataclass(frozen=True)
class Made:
    """What the setup makes of A/foo past its names (`made_for`): `links` more links to it,
    `xattrs` on it, or it a fifo (`fifo`); false where it makes none."""
    links: int = 0
    xattrs: int = 0
    fifo: bool = False

    def __bool__(self) -> bool:
        return bool(self.links or self.xattrs or self.fifo)

    @property
    def at_creation(self) -> "Made":
        """What A/foo is as it is created: a fifo is one from the start; its links and xattrs
        come with later steps of the setup."""
        return Made(fifo=self.fifo)


NOTHING = Made()


def link_names(count: int) -> tuple[str, ...]:
    return tuple(f"{FOO}_link_{i}" for i in range(1, count + 1))


def setup_xattrs(count: int) -> tuple[tuple[str, str], ...]:
    """The xattrs setup's (name, value) pairs, sorted as a model inode keeps them."""
    return tuple((f"user.attr_{i:04d}", f"val_{i:04d}") for i in range(1, count + 1))


def made_for(workload) -> Made:
    """What the setup of `workload` (a `steps.Workload`) makes of A/foo, before `built` checks
    every step is valid with it: nothing where the setup does not make it, or the filesystem
    refuses it."""
    if FOO not in workload.setup or workload.extra in workload.refused:
        return NOTHING
    extra = workload.extra
    return Made(MANY if extra == "links" else 0, XATTRS if extra == "xattrs" else 0, extra == "fifo")


def setup_tree(names, made: Made = NOTHING) -> Tree:
    """The tree the setup makes of `names`, with what it `made` of A/foo."""
    tree = Tree()
    for path in names:
        node = Inode(FILE, bytes([SETUP_BYTE[path]]) * INITIAL_SIZE) if path in SETUP_BYTE else Inode(DIR)
        if path == FOO and (made.xattrs or made.fifo):
            node = Inode(FIFO) if made.fifo else Inode(FILE, node.data, xattrs=setup_xattrs(made.xattrs))
        tree.paths[path] = tree.new_inode(node)
    if made.links:
        tree.paths.update((name, tree.paths[FOO]) for name in link_names(made.links))
    return tree


def link_loop(count: int, at) -> list[str]:
    """The setup's lines that make the links: a loop in the guest's sh. `at`: how the script
    names a path (`program.Tools.at`)."""
    return [f"# {count} more links to {FOO}, in its directory",
            f'pp_i=1; while [ "$pp_i" -le {count} ]; do ln {at(FOO)} {at(FOO)}_link_"$pp_i"; '
            'pp_i=$((pp_i + 1)); done']


def xattr_loop(count: int, at, setxattr) -> list[str]:
    """The setup's lines that set the xattrs: a loop in the guest's sh, the number's four digits
    cut from 10001 ... (no process for a printf). `setxattr`: the script's
    command (`program.Tools.setxattr(path, value, name)`)."""
    n = '"$pp_n"'
    return [f"# {count} user xattrs on {FOO}",
            f'pp_i=10001; while [ "$pp_i" -le {10000 + count} ]; do pp_n=${{pp_i#1}}; '
            f"{setxattr(at(FOO), f'val_{n}', f'user.attr_{n}')}; pp_i=$((pp_i + 1)); done"]


def quota_line(root: str, refused: bool) -> str:
    """The quota setup's command on the filesystem mounted at `root`; `refused`: not btrfs, so
    it must fail, and the program goes on."""
    command = QUOTA.format(root=root)
    if refused:
        return f'if {command} 2>/dev/null; then echo "not refused: quota" >&2; false; fi  # no btrfs quotas here'
    return command


def setup_kind(synced: bool, extra: str = "") -> str:
    return extra or ("synced" if synced else "unsynced")


def built(workload) -> tuple[Made, list[Tree]]:
    """What the setup of `workload` makes of A/foo (`made_for`) and its model trees; nothing
    where a step is invalid with it."""
    if made := made_for(workload):
        try:
            return made, grown(workload, made)
        except ValueError:
            pass
    return NOTHING, grown(workload)


def grown(workload, made: Made = NOTHING) -> list[Tree]:
    """The model tree after the setup (with what it `made`) and after each operation of
    `workload`; ValueError on a step that is invalid there, or a point of a fifo."""
    sim = Sim(setup_tree(workload.setup, made))
    out = [sim.tree.sealed()]
    for i, step in enumerate(workload.steps, 1):
        if workload.refuses(step.op):
            if any(sim.tree.kind(path) == FIFO for path in step.op.args):  # ESPIPE, or an open that waits
                raise ValueError(f"{workload.ident}: step {i} ({step.op.text()}) is refused, and on a fifo otherwise")
        elif not apply(sim, step.op, i, lenient=bool(workload.refused)):
            raise ValueError(f"{workload.ident}: step {i} ({step.op.text()}) is invalid")
        if step.persist is not None and step.persist.path and sim.tree.kind(step.persist.path) == FIFO:
            raise ValueError(f"{workload.ident}: point {step.persist.text()} names a fifo")
        sim.pointed = step.persist is not None
        out.append(sim.tree.sealed())
    return out
