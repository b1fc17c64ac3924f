"""The thirteenth table's model (docs/generate.md, "The thirteenth table"): an O_TMPFILE file
(`tmpfile.fsync`: open(2) with O_TMPFILE in a directory, 64 KiB written, the descriptor
fsynced and closed; xfs_io `-T`, as fstests generic/509 does it).

What the model owes: nothing new. The file never has a name, and its one reference goes when
its descriptor closes, so the step changes no name of the model tree: the points after it owe
what they owed before it, and a recovered tree that shows the file under a name (a replayed
tmpfile linked somewhere) has a name no point of the workload has. What the step is for is the
replay of a log that holds an inode with no name (509's fix, f2d72f42d5fa: a warning, then a
kernel-crash verdict by the console) and a new inode made after it (the step after recovery).

Refused nowhere: ext4 (ext4_tmpfile, Linux 3.11), xfs (xfs_vn_tmpfile, 3.15, on the v4 format
of xfs-2008 too), btrfs (btrfs_tmpfile, 3.16) and f2fs (f2fs_tmpfile, 3.16) all have O_TMPFILE.
One row per directory of the model (`tree.DIRS`), the file's directory: each row multiplies
the seq-3 space."""

from plugpull.generate.tree import DIR, DIRS

FAMILY = "tmpfile"
TMPFILE_ROWS = tuple((FAMILY, "fsync", (d,)) for d in DIRS)
TMPFILE_BYTES = 65536  # 509's write


def tmpfile_step(sim, op) -> bool:
    """The step on the model (`ops.Sim`): valid in an existing directory (the setup makes it if
    untouched); no name changes."""
    return sim.exists(op.args[0], (DIR,))


def tmpfile_command(xfs_io: str, directory: str, fill: int) -> str:
    """The step's shell command: `directory` as the script names it, the bytes written `fill`."""
    return f'{xfs_io} -T -c "pwrite -q -S {fill:#04x} 0 {TMPFILE_BYTES}" -c fsync {directory}'
