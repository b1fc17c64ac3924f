"""The twelfth table's model (docs/generate.md, "The twelfth table"): a btrfs snapshot of the
filesystem's root subvolume to a name in the work directory or in A (`snapshot.make`), and its
deletion (`snapshot.delete`): fstests btrfs/118 (a snapshot deleted, then its parent directory
fsynced) and btrfs/120 (the same, then the parent removed and made again and fsynced). Plain
functions and tuples, so that `ops` (which owns the operation table and its `Op`) builds the rows.

What the model owes: a snapshot is a directory at its name (`tree.SNAPS`), made and removed as
mkdir and rmdir make and remove one, so the name is owed present or absent by the rules that owe
any directory entry (sync, the parent's fsync). Its own subtree is not judged: it holds a copy
of the root subvolume (the work directory among it) as the last commit had it, which the bugs
are not about, and no name below a snapshot is among the model's names, so no rule owes anything
of it and the checker does not read it. Both bugs are the log left unreplayable (the mount
fails, which every check sees) or the parent's entries lost after its fsync, which the rules owe.

btrfs only: every other filesystem refuses the family (`oracle.REFUSED`); its program runs the
command, which must fail, and goes on with the step not done."""

from plugpull.generate.tree import DIR, SNAPS, Inode, parent

FAMILY = "snapshot"
SNAPSHOT_ROWS = tuple([(FAMILY, "make", (s,)) for s in SNAPS[:2]] + [(FAMILY, "delete", (s,)) for s in SNAPS[:2]])
# the btrfs-progs commands, each with the root subvolume and the snapshot's name; quiet (stdout dropped:
# they say what they did there), errors on stderr
COMMANDS = {"make": "btrfs subvolume snapshot {root} {path} >/dev/null",
            "delete": "btrfs subvolume delete {path} >/dev/null"}


def snapshots_there(tree) -> tuple:
    """What `ops.Sim.key` adds for the snapshots in `tree`: their names, where there are any (a
    snapshot's name free, untouched or gone allows the same steps, and so does a tree without
    one: its key is the key it always was, so no earlier count or id moves); else nothing."""
    there = tuple(p for p in SNAPS if p in tree.paths)
    return (there,) if there else ()


def snapshot_step(sim, op) -> bool:
    """A snapshot step on the model (`ops.Sim`): made at a free name in an existing directory
    (the setup makes that directory if untouched), or deleted where the workload made one (the
    setup makes no snapshot; a rename of A moves A/snap to B/snap, which no row deletes)."""
    variant, (path,) = op.variant, op.args
    if variant == "make":
        if not sim.absent(path):
            return False
        sim.tree.paths[path] = sim.tree.new_inode(Inode(DIR))
        return True
    if path not in sim.known or sim.tree.kind(path) != DIR:
        return False
    sim.tree.unlink(path)
    return True


def snapshot_command(variant: str, path: str, root: str, refused: bool) -> str:
    """The step's shell command: `path` as the script names it, `root` the root subvolume
    (the work directory's parent in the guest, the mount point in a reproducer). `refused`: the
    filesystem has no snapshots, so the command must fail (a non-btrfs filesystem's error)
    and the program goes on without it; one that works there fails the program."""
    command = COMMANDS[variant].format(root=root, path=path)
    if refused:
        return (f'if {command} 2>/dev/null; then echo "not refused: {variant} {path}" >&2; false; fi'
                "  # no snapshots here: not done")
    return command
