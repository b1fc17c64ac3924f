"""What every command shares: exit codes, guest options, workload parameters, tables."""

import argparse
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import a_path, check_input, check_output
from plugpull.values import WHOLE_TEXT, shown, whole
from plugpull.guest.config import Accel
from plugpull.log import add_log_options

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


def on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on or off, got {shown(text)}")
    return text == "on"


def one_of(kind):
    """An argparse `type` for a StrEnum: its member, or one line listing the known values."""
    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(kind)}, got {shown(text)}") from None
    return parse


def describe(error: BaseException) -> str:
    """One line for an error: an OSError names its path (`No space left on device: /x/y`)."""
    if isinstance(error, OSError) and error.strerror:
        paths = [str(p) for p in (error.filename, error.filename2) if p is not None]
        return error.strerror + (f": {' -> '.join(paths)}" if paths else "")
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


def kernel_source(args):
    """The --kernel and --modules pair, checked: a kernel image (bzImage or ELF vmlinux) and a
    modules tree that exist."""
    from plugpull.guest.image import KernelSource
    from plugpull.guest.kernel import kernel_format
    if args.kernel is None:
        return None
    if args.modules is None:
        raise UsageError("--kernel needs --modules (the kernel's lib/modules/RELEASE tree)")
    for p in (args.kernel, args.modules):
        if not p.exists():
            raise UsageError(f"{p} does not exist")
    check_input(args.kernel, "--kernel")
    try:
        with open(args.kernel, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise UsageError(f"--kernel {args.kernel}: {e.strerror}") from None
    if kernel_format(head) is None:
        raise UsageError(f"--kernel {args.kernel}: not a kernel (neither a bzImage nor an ELF vmlinux)")
    if not args.modules.is_dir():
        raise UsageError(f"--modules {args.modules}: not a directory")
    return KernelSource(args.kernel, args.modules)


def checked_output(path: Path, flag: str, parent_must_exist: bool = True, directory: bool = False) -> Path:
    """A file (or a directory) plugpull will write, tried before the run starts so that no
    result is lost to a bad path: `files.check_output`."""
    return check_output(path, flag, directory=directory, parents=not parent_must_exist)


def whole_option(low: int, high: int):
    """An argparse `type`: a whole number from `low` to `high` (`plugpull.values.whole`)."""
    def parse(text: str) -> int:
        try:
            return whole(text, low, high)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    parse.numeric = True
    return parse


def fraction(text: str) -> float:
    """An argparse `type`: a number above 0 and at most 1 (`--scale`)."""
    try:
        value = float(text) if len(text) < 40 else -1.0
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number above 0 and at most 1, got {shown(text)}")
    return value


fraction.numeric = True


def parse_params(items: list[str]) -> list[tuple[str, object]]:
    """NAME=VALUE pairs; a value in ASCII digits becomes a whole number, any other stays text
    for the workload to check (`²` and `--5` are text, refused where a number is expected).
    A name given twice is refused."""
    out: dict[str, object] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"bad --param {shown(item)}: expected NAME=VALUE")
        if name in out:
            raise UsageError(f"bad --param {shown(item)}: {name} is given twice")
        out[name] = int(value) if WHOLE_TEXT.fullmatch(value) else value
    return list(out.items())


def add_guest_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accel", type=one_of(Accel), choices=list(Accel), default=Accel.AUTO)
    p.add_argument("--kernel", type=a_path, help="boot this kernel (bzImage) instead of the host's")
    p.add_argument("--modules", type=a_path, help="with --kernel: its lib/modules/RELEASE tree")
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
