"""What `--kernel` names: the host's kernel, a kernel file, or a Debian kernel by version.

    host                      the host's newest Debian kernel (the default)
    debian:6.12               the newest 6.12.x the archive offers
    debian:6.12.117           the newest package of upstream 6.12.117
    debian:6.12.117-1         that exact package version
    debian:6.12.117+deb13-amd64   that kernel release (the name under /lib/modules)
    PATH                      a kernel image; --modules names its modules tree
"""

import re
from dataclasses import dataclass
from enum import StrEnum

from plugpull.errors import UsageError
from plugpull.values import shown
from plugpull.kernels.versions import series_of, upstream_numbers

DEBIAN = "debian:"
HOST = "host"
FLAVOUR = "amd64"
EXAMPLES = "debian:6.12, debian:7.3, debian:6.12.117-1"
VERSION_MAX = 64  # Debian's kernel versions are half that; no 5000-digit number is read
_SERIES = re.compile(r"^\d+\.\d+$")
_UPSTREAM = re.compile(r"^\d+\.\d+\.\d+$")
_VERSION_CHARS = re.compile(r"^(\d+:)?\d[0-9A-Za-z.+~-]*$")


class Match(StrEnum):
    SERIES = "series"        # 6.12: the newest of the series
    UPSTREAM = "upstream"    # 6.12.117: the newest package of that upstream release
    VERSION = "version"      # 6.12.117-1: one package version
    RELEASE = "release"      # 6.12.117+deb13-amd64: one kernel release


@dataclass(frozen=True)
class DebianKernel:
    """A Debian kernel as the user named it; `matches` tells which offers it names."""

    text: str
    match: Match

    def __str__(self) -> str:
        return f"{DEBIAN}{self.text}"

    @property
    def numbers(self) -> tuple[int, ...]:
        return upstream_numbers(self.text)

    def matches(self, release: str, version: str) -> bool:
        if self.match is Match.SERIES:
            return series_of(version) == self.text
        if self.match is Match.UPSTREAM:
            return upstream_numbers(version) == self.numbers
        if self.match is Match.VERSION:
            return version == self.text
        return release == self.text


def is_debian(text: str | None) -> bool:
    return text is not None and text.startswith(DEBIAN)


def parse_debian(text: str, flag: str = "--kernel") -> DebianKernel:
    """`debian:VERSION` -> a `DebianKernel`; a one-line `UsageError` for anything else, naming
    `flag` (what gave the text: `--kernel`, or `kernels` for its arguments)."""
    if not is_debian(text):
        raise UsageError(f"{flag} {text}: not a Debian kernel (e.g. {EXAMPLES})")
    version = text[len(DEBIAN):].strip()
    if not version:
        raise UsageError(f"{flag} {text} names no version (e.g. {EXAMPLES})")
    if len(version) > VERSION_MAX or not _VERSION_CHARS.match(version) or not upstream_numbers(version):
        raise UsageError(f"{flag} {text if len(text) <= 80 else shown(text)}: {shown(version)} is not a kernel "
                         f"version (e.g. {EXAMPLES})")
    if _SERIES.match(version):
        return DebianKernel(version, Match.SERIES)
    if _UPSTREAM.match(version):
        return DebianKernel(version, Match.UPSTREAM)
    if version.endswith(f"-{FLAVOUR}"):
        return DebianKernel(version, Match.RELEASE)
    if "-" in version:
        return DebianKernel(version, Match.VERSION)
    raise UsageError(f"{flag} {text}: {version!r} is neither a series (6.12), a release (6.12.117) "
                     f"nor a package version (6.12.117-1)")
