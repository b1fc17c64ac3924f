"""A hot-plugged disk as a read-only file on the host while the guest keeps it: QEMU's FUSE
export of the disk's node (QMP `block-export-add`). The host's fsck reads a crash state
through it once the guest's recovery mount is over (`check.hostfsck`).

A QEMU that is killed leaves its FUSE mounts behind, disconnected: `abandon` detaches them,
so that the guest's temporary directory can go."""

import ctypes
import ctypes.util
import errno
import logging
import os
from pathlib import Path
from typing import Callable

MNT_DETACH = 2
log = logging.getLogger(__name__)


class Exports:
    """`command(name, arguments)` sends a QMP command; `wait_event(event, id)` returns once
    QEMU has sent that event about that id."""

    def __init__(self, command: Callable, wait_event: Callable, directory: Path):
        self._command = command
        self._wait_event = wait_event
        self._directory = directory
        self._paths: dict[str, Path] = {}

    def add(self, node: str) -> Path:
        """The node's contents as a file, until `remove(node)`."""
        path = self._directory / f"{node}.export"
        path.touch()
        try:
            self._command("block-export-add", {"type": "fuse", "id": _export_id(node), "node-name": node,
                                               "mountpoint": str(path), "writable": False})
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        self._paths[node] = path
        return path

    def remove(self, node: str) -> None:
        path = self._paths.pop(node)
        self._command("block-export-del", {"id": _export_id(node)})
        self._wait_event("BLOCK_EXPORT_DELETED", _export_id(node))
        path.unlink(missing_ok=True)

    def abandon(self) -> None:
        """Detach what is still mounted (QEMU gone); nothing is waited for."""
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        for path in self._paths.values():
            if libc.umount2(os.fsencode(path), MNT_DETACH) != 0 and ctypes.get_errno() not in (errno.EINVAL, errno.ENOENT):  # not mounted, or gone
                log.debug("could not detach %s: %s", path, os.strerror(ctypes.get_errno()))
        self._paths.clear()


def _export_id(node: str) -> str:
    return f"export-{node}"
