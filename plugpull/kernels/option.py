"""`--kernel` and `--modules` as every guest command (and the pytest plugin) takes them: the
host's kernel, a kernel file with its modules tree, a Debian kernel by version, or a kernel
built here (`build:NAME`, plugpull kernels build)."""

import re
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import open_regular
from plugpull.values import once_each
from plugpull.guest.image.build import KernelSource
from plugpull.guest.image.kernel import kernel_format
from plugpull.kernels.build.buildspec import is_build
from plugpull.kernels.naming import HOST, is_debian, parse_debian


def kernel_option(kernel: str | None, modules: Path | None, kernels=None) -> KernelSource | None:
    """The kernel to boot; None for the host's. Bad input is a one-line `UsageError`, said
    before anything is fetched or booted; a Debian kernel is resolved (and fetched once)."""
    if kernel is not None and not kernel.strip():
        raise UsageError(f"--kernel: expected host, debian:VERSION, build:NAME or a kernel file, got {kernel!r}")
    if kernel is None or kernel == HOST:
        if modules is not None:
            raise UsageError(f"--modules goes with a kernel file (--kernel PATH), not with --kernel {kernel or HOST}")
        return None
    if is_debian(kernel):
        spec = parse_debian(kernel)
        if modules is not None:
            raise UsageError(f"--kernel {kernel} brings its own modules: drop --modules")
        from plugpull.kernels.resolve import Kernels
        return (kernels or Kernels()).resolve(spec).source
    if is_build(kernel):
        if modules is not None:
            raise UsageError(f"--kernel {kernel} brings its own modules: drop --modules")
        return built_kernel(kernel, kernels)
    if "," in kernel and not Path(kernel).exists():
        raise UsageError(f"--kernel {kernel}: one kernel here (a list is for matrix and reproduce)")
    if re.match(r"^[a-z]+:", kernel) and not Path(kernel).exists():
        raise UsageError(f"--kernel {kernel}: unknown kernel source {kernel.split(':')[0]!r} "
                         f"(debian:VERSION, build:NAME, a kernel file, or host)")
    return kernel_file(Path(kernel), modules)


def kernel_options(texts, modules: Path | None, kernels=None) -> list[tuple[str, KernelSource | None]]:
    """Several kernels, as the matrix takes them: (name, kernel) each, None for the host's.
    Every name is checked (a Debian one against the archive's offers) before any is fetched."""
    if any(not t.strip() for t in texts):
        raise UsageError("--kernel: an empty name in the list (host, debian:VERSION or a kernel file)")
    texts = [t.strip() for t in texts] or [HOST]
    try:
        once_each(texts)
    except ValueError as e:
        raise UsageError(f"--kernel: {e}") from None
    if len(texts) > 1 and modules is not None:
        raise UsageError("--modules goes with one kernel file, not with a list of kernels")
    if modules is not None and (is_debian(texts[0]) or is_build(texts[0]) or texts[0] == HOST):
        kernel_option(texts[0], modules)  # refused before the archive is asked
    chosen: dict[str, str] = {}
    for text in texts:
        if is_debian(text):
            kernels = _chosen_once(text, "--kernel", kernels, chosen)
        elif is_build(text):
            built_kernel(text, kernels)
        elif text != HOST:
            if "," in text or len(texts) > 1:
                raise UsageError(f"--kernel {text}: a kernel file goes alone, with --modules; "
                                 f"a list names host, debian:VERSION and build:NAME kernels")
            kernel_file(Path(text), modules)
    return [(text, kernel_option(text, modules, kernels)) for text in texts]


def offered_once(texts: list[str], flag: str, kernels=None):
    """Debian kernels as `plugpull kernels` takes them: each name given once, each offered by
    the archive (the lists fetched if stale, nothing else), no two of them one kernel; a
    UsageError naming `flag` otherwise (refused, never merged: `once_each`). The `Kernels`
    asked, made if needed."""
    try:
        once_each(texts)
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None
    chosen: dict[str, str] = {}
    for text in texts:
        kernels = _chosen_once(text, flag, kernels, chosen)
    return kernels


def _chosen_once(text: str, flag: str, kernels, chosen: dict[str, str]):
    """The archive's kernel `text` names, refused if another name in `chosen` (release ->
    name) is the same kernel; the `Kernels` asked."""
    from plugpull.kernels.resolve import Kernels
    kernels = kernels or Kernels()
    release = kernels.choose(parse_debian(text, flag)).release
    if release in chosen:
        raise UsageError(f"{flag}: {chosen[release]} and {text} are one kernel ({release}): name it once")
    chosen[release] = text
    return kernels


def built_kernel(text: str, kernels=None) -> KernelSource:
    """`build:NAME`: a kernel `plugpull kernels build` made; a one-line `UsageError` when there is none."""
    from plugpull.kernels.build import BuildStore, parse_build
    from plugpull.kernels.resolve import Kernels
    name = parse_build(text)
    return BuildStore((kernels or Kernels()).root / "builds").find(name)


def kernel_file(kernel: Path, modules: Path | None) -> KernelSource:
    """A kernel image (bzImage or ELF vmlinux) and a modules tree that exist."""
    if modules is None:
        raise UsageError(f"--kernel {kernel} needs --modules (the kernel's lib/modules/RELEASE tree), "
                         f"or name a Debian kernel: --kernel debian:6.12")
    for p in (kernel, modules):
        if not p.exists():
            raise UsageError(f"{p} does not exist")
    try:
        with open_regular(kernel, "--kernel") as f:
            head = f.read(4096)
    except OSError as e:
        raise UsageError(f"--kernel {kernel}: {e.strerror}") from None
    if kernel_format(head) is None:
        raise UsageError(f"--kernel {kernel}: not a kernel (neither a bzImage nor an ELF vmlinux)")
    if not modules.is_dir():
        raise UsageError(f"--modules {modules}: not a directory")
    return KernelSource(kernel, modules)
