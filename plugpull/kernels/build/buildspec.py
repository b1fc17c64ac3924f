"""What `kernels build` builds and what `--kernel build:NAME` names.

    debian:7.3           Debian's source of the kernel `--kernel debian:7.3` names, Debian's patches applied
    src:DIR              a kernel tree of the user's, built out of tree (`make O=`), the tree left untouched
    build:NAME           a kernel built here under NAME (`plugpull kernels` lists them)
"""

import re
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.kernels.naming import DEBIAN, DebianKernel, parse_debian

SRC = "src:"
BUILD = "build:"
NAME_CHARS = re.compile(r"^[A-Za-z0-9._+-]+$")
NAME_MAX = 100
EXAMPLES = "debian:7.3, debian:7.3.4-1~bpo13+1, src:~/linux"


@dataclass(frozen=True)
class TreeSource:
    """A kernel tree the user has (`src:DIR`)."""

    path: Path

    def __str__(self) -> str:
        return f"{SRC}{self.path}"


def parse_build_source(text: str) -> DebianKernel | TreeSource:
    """`kernels build`'s SPEC: a `DebianKernel` or a `TreeSource`; a one-line `UsageError` else."""
    if text.startswith(DEBIAN):
        return parse_debian(text, "kernels build")
    if text.startswith(SRC):
        return TreeSource(tree_path(text[len(SRC):]))
    raise UsageError(f"kernels build {text}: expected debian:VERSION or src:DIR (e.g. {EXAMPLES})")


def tree_path(text: str) -> Path:
    """`src:DIR`'s DIR: a kernel tree (a directory with a Makefile and Kconfig)."""
    if not text.strip():
        raise UsageError(f"{SRC} names no directory (e.g. src:~/linux)")
    try:
        path = Path(text).expanduser().absolute()
    except RuntimeError:  # `~nouser/x`: no such user, no home to expand
        raise UsageError(f"{SRC}{text}: {text.split('/')[0]} names no user's home directory") from None
    if not path.is_dir():
        raise UsageError(f"{SRC}{text}: not a directory")
    if not ((path / "Makefile").is_file() and (path / "Kconfig").is_file()):
        raise UsageError(f"{SRC}{text}: not a kernel tree (no Makefile and Kconfig at its top)")
    return path.resolve()


def is_build(text: str | None) -> bool:
    return text is not None and text.startswith(BUILD)


def check_name(name: str, what: str = "--name") -> str:
    """A build's name: letters, digits and `._+-`, as a file name and in a `--kernel` list."""
    if not name or len(name) > NAME_MAX or not NAME_CHARS.match(name) or name in (".", ".."):
        raise UsageError(f"{what} {name!r}: a build's name is 1 to {NAME_MAX} of the characters "
                         f"A-Z a-z 0-9 . _ + - (e.g. 7.3.4-1-f2fs-first-fsync)")
    return name


def parse_build(text: str) -> str:
    """`build:NAME` -> NAME, checked."""
    if not is_build(text):
        raise UsageError(f"--kernel {text}: not a built kernel (build:NAME)")
    return check_name(text[len(BUILD):], f"--kernel {BUILD}")


def default_name(source: DebianKernel | TreeSource, version: str, patches: list[Path]) -> str:
    """A readable name: the Debian version (its `~bpo13+1` backport suffix dropped) or the tree's
    folder name, then each patch's name without `.patch`/`.diff` (`revert-` before a reverted
    one): `7.3.4-1-f2fs-first-fsync`."""
    if isinstance(source, DebianKernel):
        base = version.split(":")[-1].split("~")[0]
    else:
        base = source.path.name
    parts = [base, *(("revert-" if getattr(p, "reverse", False) else "") + re.sub(r"\.(patch|diff)$", "", p.name)
                     for p in patches)]
    name = re.sub(r"[^A-Za-z0-9._+-]+", "-", "-".join(parts)).strip("-.") or "kernel"
    return name[:NAME_MAX]
