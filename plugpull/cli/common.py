"""What every command shares: exit codes, guest options, workload parameters, tables."""

import argparse
import functools
import os
import re
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import InputPath, a_path, check_output
from plugpull.values import WHOLE_TEXT, decimal, shown, whole
from plugpull.guest.contract.config import Accel
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


BLANK_EDGE = re.compile(r"^\s|\s$|\s,|,\s")


def no_blank_edges(kind):
    """An argparse `type` wrapping `kind` (None: the text itself): a value with a space at an
    end or beside a comma is refused (`--fsck 'every:1 '`, `--kernel 'debian:6.12 ,host'`),
    as `--seq ' 1'` is, never read as the value without it. Paths (`any_text`) are exempt."""
    if getattr(kind, "any_text", False):
        return kind

    def parse(text: str):
        if isinstance(text, str) and BLANK_EDGE.search(text):
            raise argparse.ArgumentTypeError(f"{shown(text)} has a space at an end or beside a comma: "
                                             "write the value without it")
        return kind(text) if kind is not None else text
    return functools.update_wrapper(parse, kind) if kind is not None else parse


def kernel_source(args, filesystems):
    """--kernel and --modules, checked (plugpull.kernels.kernel_option): None for the host's
    kernel, else the KernelSource to boot; a Debian kernel is fetched once. Every profile among
    the command's `filesystems` is checked against it (`testbed.fs.check_profiles`): every
    command resolves its kernel here, so none can boot a guest for a profile its kernel lacks."""
    from plugpull.kernels import kernel_option
    from plugpull.testbed.fs import check_profiles
    kernel = kernel_option(args.kernel, args.modules)
    check_profiles(filesystems, kernel)
    return kernel


def kernel_list(args, filesystems, default=("host",), known: dict | None = None) -> list:
    """--kernel as matrix and reproduce take it, a comma-separated list (host, debian:VERSION;
    or one kernel file with --modules): [(name, KernelSource or None for the host's)], every
    name checked before any kernel is fetched, then the profiles among `filesystems` checked
    against each kernel (as `kernel_source`). `known`: lists already resolved, by their names,
    so that several case files on one list resolve it once and are each checked."""
    from plugpull.kernels.option import kernel_options
    from plugpull.testbed.fs import check_profiles
    texts = tuple(args.kernel.split(",") if args.kernel is not None else default)
    known = {} if known is None else known
    if texts not in known:
        known[texts] = kernel_options(list(texts), args.modules)
    for _, kernel in known[texts]:
        check_profiles(filesystems, kernel)
    return known[texts]


def checked_output(path: Path, flag: str, parent_must_exist: bool = True, directory: bool = False) -> Path:
    """A file (or a directory) plugpull will write, tried before the run starts so that no
    result is lost to a bad path: `files.check_output`."""
    return check_output(path, flag, directory=directory, parents=not parent_must_exist)


def lock_writable(out: Path, lock: str) -> None:
    """The lock file of a directory with one writer (a hunt's, a bisect's), if there, opened for
    writing as its holder will open it: one the user cannot write (another user's hunt, an
    immutable file) is a UsageError naming it, before anything is made, never a harness failure."""
    path = Path(out) / lock
    if not path.is_file() or path.is_symlink():
        return  # new, or a kind the directory's own check refuses
    try:
        os.close(os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC))
    except OSError as e:
        raise UsageError(f"--out {out}: its {lock} cannot be opened for writing ({e.strerror}): "
                         "a directory this user cannot write in; give a new --out") from None


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
        value = decimal(text)
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
    p.add_argument("--kernel", type=kernel_name, metavar="debian:VERSION|build:NAME|PATH|host",
                   help="the guests' kernel: Debian's by version (debian:6.12, the newest 6.12.x; debian:7.3; "
                        "an exact package version), one built here (build:NAME, plugpull kernels build), "
                        "a kernel image file (with --modules), or the host's (default)")
    p.add_argument("--modules", type=a_path, help="with --kernel PATH: its lib/modules/RELEASE tree")
    p.add_argument("--backend", default="qemu", choices=("qemu", "libvirt"), help="what runs the guests")
    p.add_argument("--connect", metavar="URI", type=_libvirt_uri, help="with --backend libvirt: the libvirt URI "
                   "(default qemu:///system)")
    add_log_options(p)


def kernel_name(text: str) -> str:
    """An argparse `type` for --kernel: the text; the kernel file it may name is an input
    (`paths`), so that no output of the command is written over it."""
    return text


def _kernel_paths(value: str) -> list[Path]:
    from plugpull.kernels.build.buildspec import is_build
    from plugpull.kernels.naming import HOST, is_debian
    return [] if value == HOST or is_debian(value) or is_build(value) or "," in value else [InputPath(value)]


kernel_name.paths = _kernel_paths


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
    widths = [max([len(str(h)), *(len(str(r[i])) for r in rows)]) for i, h in enumerate(header)]
    for r in (header, *rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
