"""What every command shares: exit codes, guest options, workload parameters, tables."""

import argparse
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.guest.config import Accel
from plugpull.log import add_log_options

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


def on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError("expected on or off")
    return text == "on"


def kernel_source(args):
    from plugpull.guest.image import KernelSource
    if args.kernel is None:
        return None
    if args.modules is None:
        raise UsageError("--kernel needs --modules (the kernel's lib/modules/RELEASE tree)")
    for p in (args.kernel, args.modules):
        if not p.exists():
            raise UsageError(f"{p} does not exist")
    return KernelSource(args.kernel, args.modules)


def parse_params(items: list[str]) -> list[tuple[str, object]]:
    """NAME=VALUE pairs; values that read as integers become integers."""
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--param {item!r}: expected NAME=VALUE")
        out.append((name, int(value) if value.lstrip("-").isdigit() else value))
    return out


def add_guest_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accel", type=Accel, choices=list(Accel), default=Accel.AUTO)
    p.add_argument("--kernel", type=Path, help="boot this kernel (bzImage) instead of the host's")
    p.add_argument("--modules", type=Path, help="with --kernel: its lib/modules/RELEASE tree")
    add_log_options(p)


def print_table(header, rows) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    for r in (header, *rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
