"""A writer for the Linux initramfs format (cpio "newc"), deterministic by construction:
entries are written in the order given, with mtime 0 and fixed owners."""

import stat
from typing import BinaryIO

_TRAILER = "TRAILER!!!"


class CpioWriter:
    def __init__(self, out: BinaryIO):
        self._out = out
        self._ino = 0
        self._written = 0

    def _entry(self, name: str, mode: int, data: bytes = b"", nlink: int = 1) -> None:
        self._ino += 1
        encoded = name.lstrip("/").encode() + b"\0"
        fields = (self._ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
        header = b"070701" + b"".join(b"%08X" % v for v in fields)
        self._emit(header + encoded)
        self._pad()
        if data:
            self._emit(data)
            self._pad()

    def _emit(self, data: bytes) -> None:
        self._out.write(data)
        self._written += len(data)

    def _pad(self) -> None:
        self._emit(b"\0" * (-self._written % 4))

    def directory(self, name: str, mode: int = 0o755) -> None:
        self._entry(name, stat.S_IFDIR | mode, nlink=2)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def close(self) -> None:
        self._entry(_TRAILER, 0)
        self._pad_to(512)

    def _pad_to(self, block: int) -> None:
        self._emit(b"\0" * (-self._written % block))
