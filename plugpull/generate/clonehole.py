"""The sixteenth table's model (docs/generate.md, "The sixteenth table"): the clone of a hole past
the end of a file (`clone-hole`, fstests btrfs/231) and a quota enable (`quota.enable`, fstests
btrfs/166). Plain functions and tuples, so that `ops` (which owns the operation table and its
`Op`) builds the rows; `TABLE` is what the table adds, the one place that says so.

btrfs/231's sizes are scaled by 1/8: its four ranges of 256 KiB (a hole at 256 KiB) are 32 KiB
each, its truncate to 800 KiB one to 100 KiB, its clone of the hole (256 KiB + 256 KiB to 1 MiB)
one of 32 KiB + 32 KiB to 128 KiB. That keeps what the bug needs: every range is whole blocks;
the truncate falls inside the third range, so the hole stays a hole and the fourth range's
extent is past the new size; the clone's source is the hole alone and its target lies past the
truncated size (btrfs first expands the file to it, then clones the hole, which with no-holes
inserts no item: before 3660d0bcdb82 the next fsync logged the new size and no hole, and the
fourth range's extent came back with the log's replay). The writes open the file O_SYNC, as
the test does, so that each range is an extent of its own. Three rows, each of A/foo alone.

What the model owes: the data as the writes, the truncate and the clone leave it; a clone's
target reads what the source range reads, here the hole's zeros (the rules that owe any data
change owe these). Refused where a filesystem cannot clone (`oracle.REMAPS`).

`quota.enable`: `btrfs quota enable` on the mount point, as a step, so that the rescan it starts
writes in the recorded window (the `quota` setup enables quotas before the setup's sync). It
changes no name and no data, so the model is unchanged and its points are eviction's: `sync`
and those of any name there. btrfs only: every other filesystem refuses it (`oracle.REFUSED`:
the `quota` key names the setup and this family), and its program requires the command to fail."""

from plugpull.generate.tree import FOO

FAMILY, QUOTA = "clone-hole", "quota"
TABLE = ((FAMILY, QUOTA), ())  # the operation families and persistence points the table adds
SCALE = 8  # btrfs/231's sizes divided by this
RANGE = 256 * 1024 // SCALE  # each range written, the hole between the first two, the clone's length
WRITTEN = (0, 2 * RANGE, 3 * RANGE, 4 * RANGE)  # the four ranges' offsets
TRUNCATE_TO = 800 * 1024 // SCALE  # inside the third range
SOURCE, TARGET = RANGE, 4 * RANGE  # the hole, cloned over the fourth range's place
VARIANTS = ("ranges", "truncate", "clone")
ROWS = tuple((FAMILY, v, (FOO,)) for v in VARIANTS) + ((QUOTA, "enable", ()),)


def clone_hole_fits(family: str, variant: str, size: int, anyway: bool = False) -> bool:
    """Whether a `clone-hole` step runs on a file of `size` bytes: the truncate only down (231's);
    the clone only with its source range inside the file (231's; a range past the source's end
    is cut short or refused: fs/remap_range.c). `anyway`: on a file of a size the
    workload did not plan (an earlier step the filesystem refused), the truncate still runs."""
    if variant == "truncate":
        return anyway or size > TRUNCATE_TO
    return variant == "ranges" or size >= SOURCE + RANGE


def clone_hole_data(family: str, variant: str, data: bytes, fill: int) -> bytes:
    """A file's contents after the `clone-hole` step `variant` writing the byte `fill` (as
    `ops.MODELS` takes it): the ranges written; cut to (or, where run anyway, grown to) 100 KiB;
    the source range's bytes at the target, the file extended to the target's end."""
    if variant == "truncate":
        return data[:TRUNCATE_TO].ljust(TRUNCATE_TO, b"\0")
    end = max(WRITTEN) + RANGE if variant == "ranges" else TARGET + RANGE
    buf = bytearray(data.ljust(end, b"\0"))
    if variant == "ranges":
        for offset in WRITTEN:
            buf[offset:offset + RANGE] = bytes([fill]) * RANGE
    else:
        buf[TARGET:TARGET + RANGE] = data[SOURCE:SOURCE + RANGE]
    return bytes(buf)


def clone_hole_command(variant: str, path: str, fill: int, size: int) -> tuple[str, bool]:
    """xfs_io's options and commands for the step on `path` (one step of program.FILE_STEPS:
    the size is not needed here), and whether it is the clone, which xfs_io says failed and
    still exits 0 (checked as a fallocate is)."""
    if variant == "ranges":
        return "-s " + " ".join(f'-c "pwrite -q -S {fill:#04x} {o} {RANGE}"' for o in WRITTEN), False
    if variant == "truncate":
        return f'-c "truncate {TRUNCATE_TO}"', False
    return f'-c "reflink -q {path} {SOURCE} {TARGET} {RANGE}"', True
