"""Kernels to boot guests with: the host's, a kernel file, or Debian's by version.

    from plugpull.kernels import Kernels, kernel_option
    source = kernel_option("debian:7.3", None)     # a KernelSource, for build_image / prepare_rig
    Kernels().offers()                             # what the archive offers

`naming` parses what `--kernel` names; `apt` is plugpull's own apt (its own sources, state and
cache; the host's apt is never changed); `offers` reads the archive's kernels as package sets
and chooses one; `store` unpacks and indexes a kernel once, cached by version and content;
`resolve` puts them together.
"""

from plugpull.kernels.apt import ArchiveUnreachable
from plugpull.kernels.naming import DebianKernel, parse_debian
from plugpull.kernels.option import kernel_option
from plugpull.kernels.resolve import Kernels, Resolved

__all__ = ["ArchiveUnreachable", "DebianKernel", "Kernels", "Resolved", "kernel_option", "parse_debian"]
