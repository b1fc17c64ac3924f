"""The fourteenth table's model (docs/generate.md, "The fourteenth table"): a preallocation, hole
punches, writes and truncates of A/foo at the offsets of fstests btrfs/206 and generic/695, the
two tests of btrfs made without no-holes (the `btrfs+holes` profile, testbed/features.py), where
each hole is an extent item of its own. Plain functions and tuples, so that `ops` (which owns the
operation table and its `Op`) builds the rows.

btrfs/206's offsets are its own (its file is new and its ranges lie within 12 KiB); generic/695's
MiB ranges are scaled by 1/512, 2 MiB to one 4 KiB block, so that its file of 12 MiB is one of
24 KiB: every range stays whole blocks, the write and the holes stay one extent each, and the
punches still meet the holes the truncate left (the second punch merges with the hole past the
write's end, the merge whose extent item kept its old generation). One file alone (A/foo): the
bugs are of one file's extents, and each row adds to every seq's count.

What the model owes: the data as any write, punch (fallocate PUNCH_HOLE|KEEP_SIZE: the range's
bytes inside the file read as zeros, the size kept), preallocation past the end (KEEP_SIZE:
nothing the model sees) and truncate leave it; the rules that owe any data change owe these."""

from plugpull.generate.tree import FOO

FAMILY = "holes"
# variant: (what it does, offset, length); a truncate's length is the size it sets
HOLES = {
    "falloc-k": ("falloc", 4096, 8192),  # btrfs/206: falloc -k 4 KiB+8 KiB
    "punch": ("punch", 4096, 4096),  # 206: punch 4 KiB+4 KiB; 695: 2 MiB+2 MiB
    "write": ("write", 0, 8192),  # 206: write 0+8 KiB (its write 0+4 KiB is write.overwrite)
    "truncate": ("truncate", 0, 12288),  # 206: truncate 12 KiB
    "grow": ("truncate", 0, 24576),  # 695: truncate 12 MiB
    "write-mid": ("write", 4096, 16384),  # 695: write 2 MiB+8 MiB
    "punch-end": ("punch", 16384, 4096),  # 695: punch 8 MiB+2 MiB
}
HOLE_ROWS = tuple((FAMILY, v, (FOO,)) for v in HOLES)
FALLOCATES = ("falloc", "punch")  # fallocate calls, which xfs_io's exit code does not always say failed


def hole_data(family: str, variant: str, data: bytes, fill: int) -> bytes:
    """A file's contents after the operation `variant` (of `family`, as `sizes.sized_data` takes
    it) writing the byte `fill`."""
    kind, offset, length = HOLES[variant]
    if kind == "falloc":
        return data
    if kind == "truncate":
        return data[:length].ljust(length, b"\0")
    end = offset + length
    if kind == "punch":
        stop = min(end, len(data))
        return data[:offset] + bytes(stop - offset) + data[stop:] if offset < len(data) else data
    return data[:offset].ljust(offset, b"\0") + bytes([fill]) * length + data[end:]


def hole_command(variant: str, path: str, fill: int, size: int) -> tuple[str, bool]:
    """xfs_io's options for the operation `variant` (one step of program.FILE_STEPS: the path
    and size are not needed here), and whether it is a fallocate."""
    kind, offset, length = HOLES[variant]
    command = {"falloc": f"falloc -k {offset} {length}", "punch": f"fpunch {offset} {length}",
               "write": f"pwrite -q -S {fill:#04x} {offset} {length}", "truncate": f"truncate {length}"}[kind]
    return f'-c "{command}"', kind in FALLOCATES
