"""What a culprit write is, in the filesystem's own terms, read on the host.

The layout comes from the base image (dumpe2fs and debugfs for ext4, xfs_db for XFS, all
read-only); what the write holds comes from its data in the write log (a jbd2 block's header,
an XFS log record header's cycle, a metadata block's magic). Unknown filesystems, or a tool
that is missing, give no meaning rather than an error: the explanation is an aid.
"""

import re
import struct
import subprocess
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.minimise.explain_btrfs import btrfs_layout, btrfs_meaning
from plugpull.minimise.xfslog import block_cycle, parse_record
from plugpull.powerloss.legal import durability
from plugpull.powerloss.writelog import SECTOR, iter_entries
from plugpull.reproducer.loghole import XLOG_MAGIC
from plugpull.testbed.fs import filesystem

JBD2_MAGIC = 0xC03B3998
JBD2_TYPES = {1: "descriptor", 2: "commit", 3: "superblock", 4: "superblock", 5: "revoke"}
XFS_MAGICS = {b"XFSB": "superblock", b"XAGF": "AGF", b"XAGI": "AGI", b"XAFL": "AGFL", b"IN": "inode chunk",
              b"XDB3": "directory block", b"XDD3": "directory data block", b"XDF3": "directory free block",
              b"AB3B": "free-space btree (by block)", b"AB3C": "free-space btree (by size)",
              b"IAB3": "inode btree", b"FIB3": "free-inode btree", b"BMA3": "block-map btree",
              b"RMB3": "reverse-map btree", b"R3FC": "refcount btree", b"XAR3": "attribute block",
              b"\x3b\xee": "attribute leaf", b"\x3d\xff": "directory leaf", b"\x3e\xbe": "btree node"}
READ_BYTES = 1 << 16  # a whole log record of the default 32 KiB iclog, with room
RECOVERY_WINDOW_BB = 4096  # XLOG_TOTAL_REC_SHIFT: 8 iclogs of 256 KiB, where recovery looks for torn writes


def _run(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def ext4_layout(image: Path) -> tuple[int, list[tuple[int, int, str]], set[int], Path]:
    """(block size, [(first, last, name)] of the groups' metadata, the journal's blocks, the image)."""
    text = _run(["dumpe2fs", str(image)])
    size = re.search(r"^Block size:\s+(\d+)", text, re.M)
    regions = []
    group = -1
    for line in text.splitlines():
        if m := re.match(r"Group (\d+):", line):
            group = int(m[1])
        for name, first, last in re.findall(r"(superblock|Group descriptors|Reserved GDT blocks|Block bitmap|"
                                            r"Inode bitmap|Inode table) at (\d+)(?:-(\d+))?", line):
            regions.append((int(first), int(last or first), f"group {group} {name.lower()}"))
    journal = {int(b) for b in _run(["debugfs", "-R", "blocks <8>", str(image)]).split() if b.isdigit()}
    return (int(size[1]) if size else 4096), regions, journal, image


def ext4_meaning(layout, offset: int, data: bytes) -> str:
    size, regions, journal = layout[:3]
    block = offset // size
    if block in journal:
        magic, kind, seq = struct.unpack(">III", data[:12]) if len(data) >= 12 else (0, 0, 0)
        if magic == JBD2_MAGIC:
            return f"journal {JBD2_TYPES.get(kind, f'type {kind}')} block (transaction {seq})"
        return "journal block (a logged copy of metadata)"
    for first, last, name in regions:
        if first <= block <= last:
            return f"{name} (block {block})"
    if data[:2] == b"\x0a\xf3":
        return f"extent tree block (block {block})"
    return f"block {block}: directory or file data" + _owner(layout, block)


def _owner(layout, block: int) -> str:
    """ext4: the file that owns a data block in the base image, if debugfs can tell."""
    image = layout[3] if len(layout) > 3 else None
    if image is None:
        return ""
    found = re.search(rf"^{block}\s+(\d+)", _run(["debugfs", "-R", f"icheck {block}", str(image)]), re.M)
    if not found:
        return " (free in the base image)"
    named = re.search(rf"^{found[1]}\s+(\S+)", _run(["debugfs", "-R", f"ncheck {found[1]}", str(image)]), re.M)
    return f" (inode {found[1]}" + (f", /{named[1].lstrip('/')})" if named else ")")


def xfs_layout(image: Path) -> dict:
    fields = ("blocksize", "agblocks", "logstart", "logblocks", "agblklog", "sectsize")
    text = _run(["xfs_db", "-r", "-c", "sb 0", "-c", "p " + " ".join(fields), str(image)])
    found = dict(re.findall(r"^(\w+) = (\d+)$", text, re.M))
    return {k: int(v) for k, v in found.items()} if set(fields) <= found.keys() else {}


def xfs_log_bytes(sb: dict) -> tuple[int, int]:
    """The internal log's first byte on the disk and its size."""
    log_ag, log_agbno = sb["logstart"] >> sb["agblklog"], sb["logstart"] & ((1 << sb["agblklog"]) - 1)
    return (log_ag * sb["agblocks"] + log_agbno) * sb["blocksize"], sb["logblocks"] * sb["blocksize"]


def xfs_meaning(sb: dict, offset: int, data: bytes) -> str:
    bs, agblocks = sb["blocksize"], sb["agblocks"]
    log_start, log_size = xfs_log_bytes(sb)
    if log_start <= offset < log_start + log_size:
        where = f"internal log, basic block {(offset - log_start) // SECTOR} of {sb['logblocks'] * bs // SECTOR}"
        record = parse_record(data)
        if record:
            return f"{where}: {record}"
        if len(data) >= 8 and struct.unpack(">I", data[:4])[0] == XLOG_MAGIC:
            return f"{where}: log record header, cycle {block_cycle(data)}"
        return f"{where}: log record data"
    ag, within = divmod(offset, agblocks * bs)
    if within < 4 * sb["sectsize"]:
        return f"AG {ag} {('superblock', 'AGF', 'AGI', 'AGFL')[within // sb['sectsize']]}"
    for magic, name in XFS_MAGICS.items():
        if data.startswith(magic):
            return f"AG {ag} block {within // bs}: {name}"
    return f"AG {ag} block {within // bs}: file data, or metadata without a magic"


def xfs_log_context(sb: dict, entries, cut: int, index: int) -> str:
    """Where a write to the internal log sits against the flushes: the flush before it and
    the next one, how many log writes the cache held since, and how far past the head the
    flushed log ends at it lies (recovery expects torn writes only within 4096 blocks)."""
    start, size = (b // SECTOR for b in xfs_log_bytes(sb))
    issued = list(entries[:cut])
    why = durability(issued, cut)
    in_log = [e for e in issued if e.is_write and start <= e.sector < start + size]
    target = next(e for e in in_log if e.index == index)
    flushes = [e.index for e in entries if e.is_flush]
    before = max((f for f in flushes if f < index), default=None)
    after = min((f for f in flushes if f > index), default=None)
    durable = [e for e in in_log if why.get(e.index)]
    head = (durable[-1].sector + durable[-1].nr_sectors - start) if durable else 0
    since = sum(1 for e in in_log if (before is None or e.index > before) and e.index <= index)
    past = (target.sector - start - head) % size
    after_text = f"flush entry {after}" if after is not None and after < cut else "no flush before the cut"
    return (f"log write {since} since {'no flush' if before is None else f'flush entry {before}'}, next: "
            f"{after_text}; {past} basic blocks ({past / target.nr_sectors:.0f} records of its size) past "
            f"block {head}, where the flushed log ends; recovery looks for torn writes within "
            f"{RECOVERY_WINDOW_BB} blocks of the head")


def _kind(name: str) -> str:
    """The on-disk kind a filesystem configuration is read as (xfs-2008 is XFS; ext3 is read
    by the ext4 code, as its kernel does)."""
    try:
        return filesystem(name).mount_type
    except UsageError:
        return name


def meanings(found, scratch: Path) -> dict[tuple[int, int], str]:
    """(disk, entry index) -> meaning, for each culprit write of a minimised state on its
    first disk (the filesystem's, read from its base image; the writes on a stack's
    members or an external log are left unexplained). Through a stack the filesystem does
    not start at the disk's first byte, so none is explained."""
    if found.record.meta.get("stack"):
        return {}
    fs, base = _kind(found.doc["fs"]), found.record.base
    if fs == "ext4":
        layout, explain = ext4_layout(base), ext4_meaning
    elif fs == "xfs":
        layout, explain = xfs_layout(base), xfs_meaning
    elif fs == "btrfs":
        layout, explain = btrfs_layout(base), btrfs_meaning
    else:
        return {}
    if not layout:
        return {}
    out = {}
    entries = list(iter_entries(found.record.log)) if fs == "xfs" else []
    with open(found.record.log, "rb") as log:
        for i in (i for d, i in found.culprits if d == 0):
            e = found.variation.each[0].updates[i]
            log.seek(e.data_offset)
            data = log.read(min(e.data_len, READ_BYTES)) if e.is_write else b""
            meaning = explain(layout, e.sector * SECTOR, data)
            if meaning.startswith("internal log") and e.is_write:
                meaning += "; " + xfs_log_context(layout, entries, found.doc["cut"], i)
            out[0, i] = meaning
    return out
