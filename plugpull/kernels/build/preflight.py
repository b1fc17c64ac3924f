"""What a build needs of the host, checked before anything is fetched or built: the tools
(a `doctor` row too) and the free disk (through `diskspace`, as every run checks it).

The disk a build needs was measured on Debian's 7.3 with plugpull's config (docs/kernels.md):
the unpacked source, the objects of a cold build, and the kernel and modules kept.
"""

import shutil
from pathlib import Path

from plugpull.diskspace import require_free
from plugpull.errors import ToolMissing

GiB = 2**30
SOURCE_BYTES = int(2.5 * GiB)  # Debian's unpacked source (1.8 GiB for 7.3) and its tarball while unpacking
COLD_BYTES = int(1.5 * GiB)    # a cold build's objects (1.2 GiB for 7.3)
WARM_BYTES = GiB // 2          # an incremental build's changes, the kernel and modules kept (34 MiB)

# program (or header) -> the Debian package that gives it
TOOLS = {
    "gcc": "gcc", "make": "make", "ld": "binutils", "flex": "flex", "bison": "bison", "bc": "bc",
    "perl": "perl", "patch": "patch", "cpio": "cpio", "rsync": "rsync", "depmod": "kmod",
    "dpkg-source": "dpkg-dev", "dpkg-deb": "dpkg", "xz": "xz-utils", "ccache": "ccache",
}
HEADERS = {"/usr/include/gelf.h": "libelf-dev", "/usr/include/openssl/opensslv.h": "libssl-dev"}


def missing_tools(which=shutil.which, exists=lambda p: Path(p).is_file()) -> list[tuple[str, str]]:
    """(program or header, Debian package) for each one the host lacks."""
    found = [(tool, package) for tool, package in TOOLS.items() if which(tool) is None]
    return found + [(header, package) for header, package in HEADERS.items() if not exists(header)]


def check_tools() -> None:
    missing = missing_tools()
    if missing:
        names = ", ".join(tool.rsplit("/", 1)[-1] for tool, _ in missing)
        packages = " ".join(sorted({package for _, package in missing}))
        raise ToolMissing(names, f"building a kernel needs them: install the Debian packages {packages}")


def needed_bytes(source_fetched: bool, cold: bool) -> int:
    return (0 if source_fetched else SOURCE_BYTES) + (COLD_BYTES if cold else 0) + WARM_BYTES


def check_disk(where: Path, needed: int) -> None:
    """`DiskFull` when the filesystem of `where` has less than `needed` free: not the user's
    input, but the host's, so a harness failure (exit 3), as running out mid-build is."""
    require_free(where, needed, "this kernel build", hint="free some, or set PLUGPULL_CACHE elsewhere")
