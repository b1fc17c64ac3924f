"""Results written atomically: a reader sees the old file or the new one, never half of one.

Everything is written beside its destination under a temporary name and renamed over it,
so the rename stays on one filesystem; on failure the temporary is removed.
"""

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(dest: Path, directory: bool = False):
    """Yield a temporary path beside `dest` (a file, or an empty directory); when the block
    ends without an exception it replaces `dest`, otherwise it is removed."""
    dest = Path(dest)
    if directory:
        tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp"))
    else:
        fd, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
    try:
        yield tmp
        if directory and dest.is_dir():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise


def atomic_write(dest: Path, data: bytes | str, mode: int = 0o644) -> None:
    with atomic_path(dest) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, mode)


def atomic_write_json(dest: Path, doc, indent: int | None = 1) -> None:
    atomic_write(dest, json.dumps(doc, indent=indent) + "\n")
