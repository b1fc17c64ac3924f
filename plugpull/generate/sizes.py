"""The ninth table's model (docs/generate.md#the-ninth-table-other-offsets-and-sizes): hole punches
at sub-page offsets and over ranges that overlap earlier holes or end past the end of the file
(`punch`), a truncate down to a page-aligned size and up past the end (`resize`), and a file of a
few bytes, inline on btrfs, with a small fallocate past its end (`tiny`): the offsets and sizes
of fstests generic/059, 101, 177 and 512. Plain functions on bytes, so that `ops` (which owns
the operation table) can use them without this module knowing its `Op`."""

# punch variants (fallocate PUNCH_HOLE|KEEP_SIZE, xfs_io `fpunch`): (offset, length). generic/059's
# two sub-page punches as they are (its file holds 16 KiB, as the setup's do); generic/177's three
# overlapping punches scaled from its 128 KiB file to 16 KiB (an eighth: the last 4 KiB, then
# 8 KiB to 24 KiB past the end, then 4 KiB to the end)
PUNCHES = {"sub-page": (8000, 4096), "tail": (15000, 100),
           "last": (12288, 4096), "past-eof": (8192, 16384), "to-eof": (4096, 12288)}
# resize variants (ftruncate, xfs_io `truncate`): the size, and whether it must be below (`down`) or
# above (`up`) the file's: generic/101's 64 KiB and 125 KiB of a 125 KiB file, an eighth of them
RESIZES = {"down": (8192, True), "up": (16000, False)}
TINIES = ("write", "falloc")
TINY_WRITE = 21  # bytes written at 0 to an empty file (generic/512): inline on btrfs
TINY_FALLOC = (40, 40)  # offset, length of the fallocate (mode 0) at or past the end of a tiny file


def sized_data(family: str, variant: str, data: bytes, fill: int) -> bytes:
    """A file's contents after a ninth-table operation (one `fits` allows)."""
    if family == "punch":
        offset, length = PUNCHES[variant]
        end = min(offset + length, len(data))
        return data[:offset] + bytes(end - offset) + data[end:]
    if family == "resize":
        size, _ = RESIZES[variant]
        return data[:size].ljust(size, b"\0")
    if variant == "write":
        return bytes([fill]) * TINY_WRITE
    offset, length = TINY_FALLOC
    return data.ljust(offset + length, b"\0")


def sized_fits(family: str, variant: str, size: int) -> bool:
    """Whether a ninth-table operation runs on a file of `size` bytes: a punch starts inside the
    file (one wholly past the end does nothing); a resize changes the size the way its name
    says; `tiny.write` writes an empty file, and `tiny.falloc` starts at or past its end."""
    if family == "punch":
        return size > PUNCHES[variant][0]
    if family == "resize":
        target, down = RESIZES[variant]
        return size > target if down else size < target
    return size == 0 if variant == "write" else size <= TINY_FALLOC[0]


def sized_command(family: str, variant: str, fill: int) -> tuple[str, bool]:
    """The xfs_io command of a ninth-table operation, and whether it is a fallocate (checked by
    what xfs_io prints, whose exit code does not always say that the call failed)."""
    if family == "punch":
        return "fpunch {} {}".format(*PUNCHES[variant]), True
    if family == "resize":
        return f"truncate {RESIZES[variant][0]}", False
    if variant == "write":
        return f"pwrite -q -S {fill:#04x} 0 {TINY_WRITE}", False
    return "falloc {} {}".format(*TINY_FALLOC), True
