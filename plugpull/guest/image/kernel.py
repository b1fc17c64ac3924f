"""Booting the kernel without its self-decompressor.

A Debian bzImage carries the kernel as an xz stream that the kernel unpacks itself at boot:
under TCG that costs about 2 s of a 5 s boot. When the kernel has a PVH entry point
(CONFIG_PVH, an ELF note of type XEN_ELFNOTE_PHYS32_ENTRY), QEMU can boot the uncompressed ELF
directly, so the image builder unpacks it once on the host.
"""

import gzip
import lzma
import struct
import zlib

XEN_ELFNOTE_PHYS32_ENTRY = 18
PT_NOTE = 4
_PAYLOADS = (
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x1f\x8b\x08", "gzip"),
)


def decompress_payload(bzimage: bytes) -> bytes | None:
    """The ELF kernel inside a bzImage, when its compression is one Python reads."""
    for magic, kind in _PAYLOADS:
        start = bzimage.find(magic)
        while start >= 0:
            try:
                if kind == "xz":
                    out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(bzimage[start:])
                else:
                    out = gzip.GzipFile(fileobj=_Reader(bzimage[start:])).read()
            except (lzma.LZMAError, OSError, EOFError, zlib.error):  # a stray magic in another payload
                out = b""
            if out.startswith(b"\x7fELF"):
                return out
            start = bzimage.find(magic, start + 1)
    return None


class _Reader:
    """A file over bytes that tolerates trailing data after the gzip member."""

    def __init__(self, data: bytes):
        self._data, self._pos = data, 0

    def read(self, n=-1):
        end = len(self._data) if n < 0 else self._pos + n
        out = self._data[self._pos:end]
        self._pos += len(out)
        return out


def elf_notes(elf: bytes):
    """(name, type, desc) of every note in a 64-bit little-endian ELF's PT_NOTE segments."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        if p_type != PT_NOTE:
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
            pos += 12
            name = elf[pos:pos + namesz].rstrip(b"\0")
            pos += (namesz + 3) & ~3
            desc = elf[pos:pos + descsz]
            pos += (descsz + 3) & ~3
            yield name, ntype, desc


def has_pvh_entry(elf: bytes) -> bool:
    return any(name == b"Xen" and ntype == XEN_ELFNOTE_PHYS32_ENTRY for name, ntype, _ in elf_notes(elf))


def pvh_kernel(bzimage: bytes) -> bytes | None:
    """The uncompressed kernel to boot through PVH, or None to boot the bzImage as it is."""
    elf = decompress_payload(bzimage)
    return elf if elf is not None and has_pvh_entry(elf) else None


def kernel_format(head: bytes) -> str | None:
    """"bzimage" (the boot protocol's "HdrS" at 0x202), "elf" (a vmlinux), or None: what a
    file's first bytes say it is."""
    if head[0x202:0x206] == b"HdrS":
        return "bzimage"
    if head[:4] == b"\x7fELF":
        return "elf"
    return None
