import gzip
import lzma
import struct

from plugpull.guest.image.kernel import XEN_ELFNOTE_PHYS32_ENTRY, decompress_payload, has_pvh_entry, pvh_kernel


def note(name: bytes, ntype: int, desc: bytes) -> bytes:
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(name) + 1, len(desc), ntype) + pad(name + b"\0") + pad(desc)


def tiny_elf(notes: bytes) -> bytes:
    """A 64-bit ELF header, one PT_NOTE program header, then the notes."""
    ehdr = bytearray(64)
    ehdr[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", ehdr, 0x20, 64)
    struct.pack_into("<HH", ehdr, 0x36, 56, 1)
    phdr = struct.pack("<IIQQQQQQ", 4, 0, 64 + 56, 0, 0, len(notes), len(notes), 4)
    return bytes(ehdr) + phdr + notes


PVH = tiny_elf(note(b"Xen", 6, b"linux\0") + note(b"Xen", XEN_ELFNOTE_PHYS32_ENTRY, b"\0" * 4))
NO_PVH = tiny_elf(note(b"Xen", 6, b"linux\0"))


def bzimage(payload: bytes) -> bytes:
    return b"MZ setup code and the decompressor " * 10 + payload + b"\0" * 64


def test_xz_kernel_with_pvh_note_is_unpacked():
    assert pvh_kernel(bzimage(lzma.compress(PVH, format=lzma.FORMAT_XZ))) == PVH


def test_gzip_kernel_is_unpacked():
    assert decompress_payload(bzimage(gzip.compress(PVH, mtime=0))) == PVH


def test_kernel_without_pvh_note_boots_as_bzimage():
    assert has_pvh_entry(PVH) and not has_pvh_entry(NO_PVH)
    assert pvh_kernel(bzimage(lzma.compress(NO_PVH, format=lzma.FORMAT_XZ))) is None


def test_unknown_compression_boots_as_bzimage():
    assert pvh_kernel(bzimage(b"\x28\xb5\x2f\xfd zstd frame we do not read")) is None


def test_a_stray_gzip_magic_in_a_zstd_kernel_is_passed_over():
    """Debian's 7.2 bzImage is zstd: a gzip magic inside it starts no gzip stream, and zlib
    says so with its own error. The kernel then boots as a bzImage, as for any other payload."""
    stray = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(range(7, 255)) * 8
    assert decompress_payload(bzimage(b"\x28\xb5\x2f\xfd" + bytes(64) + stray)) is None
