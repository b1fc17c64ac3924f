"""What every command shares: exit codes, guest options, workload parameters, tables."""

import argparse
import os
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.guest.config import Accel
from plugpull.log import add_log_options

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


def on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError("expected on or off")
    return text == "on"


def describe(error: BaseException) -> str:
    """One line for an error: an OSError names its path (`No space left on device: /x/y`)."""
    if isinstance(error, OSError) and error.strerror:
        paths = [str(p) for p in (error.filename, error.filename2) if p is not None]
        return error.strerror + (f": {' -> '.join(paths)}" if paths else "")
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


def kernel_source(args):
    """--kernel and --modules, checked (plugpull.kernels.kernel_option): None for the host's
    kernel, else the KernelSource to boot; a Debian kernel is fetched once."""
    from plugpull.kernels import kernel_option
    return kernel_option(args.kernel, args.modules)


def kernel_list(args, default=("host",)) -> list:
    """--kernel as matrix and reproduce take it, a comma-separated list (host, debian:VERSION;
    or one kernel file with --modules): [(name, KernelSource or None for the host's)], every
    name checked before any kernel is fetched."""
    from plugpull.kernels.option import kernel_options
    texts = args.kernel.split(",") if args.kernel else list(default)
    return kernel_options(texts, args.modules)


def kernel_tag(kernel) -> str:
    """What a matrix cell records of its kernel: the release, "" for the host's."""
    return kernel.release if kernel is not None else ""


def checked_output(path: Path, flag: str, parent_must_exist: bool = True) -> Path:
    """A file plugpull will write at the end of a run, checked before the run starts so that
    no result is lost to a bad path: not a directory, in a writable directory."""
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a directory")
    parent = path.parent
    while not parent.exists() and not parent_must_exist and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        what = "does not exist" if not parent.exists() else "is not a directory"
        raise UsageError(f"{flag} {path}: {parent} {what}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: {parent} is not writable")
    return path


def parse_params(items: list[str]) -> list[tuple[str, object]]:
    """NAME=VALUE pairs; values that read as integers become integers."""
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"bad --param {item!r}: expected NAME=VALUE")
        out.append((name, int(value) if value.lstrip("-").isdigit() else value))
    return out


def add_guest_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accel", type=Accel, choices=list(Accel), default=Accel.AUTO)
    p.add_argument("--kernel", metavar="debian:VERSION|PATH|host",
                   help="the guests' kernel: Debian's by version (debian:6.12, the newest 6.12.x; debian:7.3; "
                        "an exact package version), a kernel image file (with --modules), or the host's (default)")
    p.add_argument("--modules", type=Path, help="with --kernel PATH: its lib/modules/RELEASE tree")
    p.add_argument("--backend", default="qemu", choices=("qemu", "libvirt"), help="what runs the guests")
    p.add_argument("--connect", metavar="URI", type=_libvirt_uri, help="with --backend libvirt: the libvirt URI "
                   "(default qemu:///system)")
    add_log_options(p)


def _libvirt_uri(text: str) -> str:
    from plugpull.guest.backends import checked_uri
    try:
        return checked_uri(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"bad --connect {text!r}: ")) from None


def guest_backend(args):
    """The --backend/--connect backend, checked and ready; what it started stops at exit."""
    import atexit
    from plugpull.guest.backends import prepare_backend
    prepared = prepare_backend(args.backend, args.connect)
    atexit.register(prepared.close)
    return prepared.backend


def print_table(header, rows) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    for r in (header, *rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
