"""The ninth table's model (docs/generate.md#the-ninth-table-other-offsets-and-sizes): hole punches
at sub-page offsets and over ranges that overlap earlier holes or end past the end of the file
(`punch`), a truncate down to a page-aligned size and up past the end (`resize`), and a file of a
few bytes, inline on btrfs, with a small fallocate past its end (`tiny`), and writes through a
mapping of the file's first and last pages with the points that msync one of them alone
(`mmap`, `msync-head`, `msync-tail`): the offsets and sizes of fstests generic/059, 101, 177,
512 and 325. Plain functions on bytes, so that `ops` (which owns the operation table) can use
them without this module knowing its `Op`."""

from plugpull.generate.tree import BLOCK

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
# mmap variants: `ends` writes the first and the last page through one shared mapping of the whole
# file; `remap` maps it and writes nothing, the process of a second ranged msync (generic/325's
# second msync, which its one process makes on the same mapping). Files of whole pages, two at least
MMAPS = ("ends", "remap")
# the ranged msync points (msync(MS_SYNC) of one page of the mapping), by the page they sync
RANGED = {"msync-head": "first", "msync-tail": "last"}


def msync_range(kind: str, size: int) -> tuple[int, int]:
    """(offset, length) a ranged msync point syncs in a file of `size` bytes (whole pages)."""
    return (0, BLOCK) if RANGED[kind] == "first" else (size - BLOCK, BLOCK)


def msync_owed(kind: str, versions: list[bytes]) -> tuple[set[int], set[bytes]]:
    """The sizes and the contents a ranged msync point owes a file that had `versions` of its
    data since the setup, the last one now: the page it syncs as it is now, and the rest as in
    any of them (the other dirty pages may or may not have reached the disk); any of their sizes."""
    now = versions[-1]
    span = msync_range(kind, len(now))
    datas = {spliced(sized, v, *span) for v in versions for sized in (now, now[:len(v)].ljust(len(v), b"\0"))}
    return {len(v) for v in versions}, datas


def spliced(now: bytes, before: bytes, offset: int, length: int) -> bytes:
    """`before`, sized as `now`, with `now`'s bytes in the range: a file whose range a ranged
    msync made durable, the rest still as it was."""
    buf = bytearray(before[:len(now)].ljust(len(now), b"\0"))
    buf[offset:offset + length] = now[offset:offset + length]
    return bytes(buf)


def sized_data(family: str, variant: str, data: bytes, fill: int) -> bytes:
    """A file's contents after a ninth-table operation (one `fits` allows)."""
    if family == "punch":
        offset, length = PUNCHES[variant]
        end = min(offset + length, len(data))
        return data[:offset] + bytes(end - offset) + data[end:]
    if family == "resize":
        size, _ = RESIZES[variant]
        return data[:size].ljust(size, b"\0")
    if family == "mmap":
        if variant == "remap":
            return data
        page = bytes([fill]) * BLOCK
        return page + data[BLOCK:len(data) - BLOCK] + page
    if variant == "write":
        return bytes([fill]) * TINY_WRITE + data[TINY_WRITE:]  # pwrite at 0 (of an empty file as planned)
    offset, length = TINY_FALLOC
    return data.ljust(offset + length, b"\0")


def sized_fits(family: str, variant: str, size: int, anyway: bool = False) -> bool:
    """Whether a ninth-table operation runs on a file of `size` bytes: a punch starts inside the
    file (one wholly past the end does nothing); a resize changes the size the way its name
    says; `tiny.write` writes an empty file, and `tiny.falloc` starts at or past its end; `mmap`
    maps a file of whole pages, two at least (a page wholly past the end is SIGBUS). `anyway`:
    whether the program's call still runs, with the effect `sized_data` gives, on a file of a size
    the workload did not plan (an earlier step the filesystem refused): all but an mmap of a file
    under two pages do."""
    if anyway:
        return family != "mmap" or size >= 2 * BLOCK
    if family == "punch":
        return size > PUNCHES[variant][0]
    if family == "resize":
        target, down = RESIZES[variant]
        return size > target if down else size < target
    if family == "mmap":
        return size >= 2 * BLOCK and size % BLOCK == 0
    return size == 0 if variant == "write" else size <= TINY_FALLOC[0]


def sized_commands(family: str, variant: str, fill: int, size: int, msync: str) -> tuple[list[str], bool]:
    """The xfs_io commands of a ninth-table operation on a file of `size` bytes, in one process
    (`msync`: the ranged msync point after it, done by the process that holds the mapping; "":
    none), and whether it is a fallocate (checked by what xfs_io prints, whose exit code does
    not always say that the call failed)."""
    if family == "mmap":
        cmds = [f"mmap -w 0 {size}"]
        if variant == "ends":
            cmds += [f"mwrite -S {fill:#04x} 0 {BLOCK}", f"mwrite -S {fill:#04x} {size - BLOCK} {BLOCK}"]
        return cmds + (["msync -s {} {}".format(*msync_range(msync, size))] if msync in RANGED else []), False
    if family == "punch":
        return ["fpunch {} {}".format(*PUNCHES[variant])], True
    if family == "resize":
        return [f"truncate {RESIZES[variant][0]}"], False
    if variant == "write":
        return [f"pwrite -q -S {fill:#04x} 0 {TINY_WRITE}"], False
    return ["falloc {} {}".format(*TINY_FALLOC)], True
