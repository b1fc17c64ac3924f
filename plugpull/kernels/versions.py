"""Debian package versions: dpkg's order, and what a kernel package's version says of its
upstream release (`6.12.117-1` -> 6.12.117, series 6.12)."""

import functools
import re

_NUMBERS = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def _order(char: str) -> int:
    """dpkg's weight of one character of a non-digit run: `~` sorts before anything, even the
    end of the string; letters before other symbols."""
    if not char or char.isdigit():
        return 0
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(a: str, b: str) -> int:
    """dpkg's comparison of an upstream version or a revision: alternate runs of non-digits
    (by `_order`) and digits (by value)."""
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac, bc = _order(a[i:i + 1]), _order(b[j:j + 1])
            if ac != bc:
                return ac - bc
            i, j = i + 1, j + 1
        start_i, start_j = i, j
        while i < len(a) and a[i].isdigit():
            i += 1
        while j < len(b) and b[j].isdigit():
            j += 1
        na, nb = int(a[start_i:i] or 0), int(b[start_j:j] or 0)
        if na != nb:
            return -1 if na < nb else 1
    return 0


def split_version(version: str) -> tuple[int, str, str]:
    """(epoch, upstream, revision) of a Debian version."""
    epoch, _, rest = version.rpartition(":") if ":" in version else ("0", "", version)
    upstream, dash, revision = rest.rpartition("-")
    if not dash:
        upstream, revision = rest, ""
    return int(epoch or 0), upstream, revision


def compare_versions(a: str, b: str) -> int:
    """<0, 0 or >0 as Debian version `a` sorts before, with or after `b` (dpkg --compare-versions)."""
    ea, ua, ra = split_version(a)
    eb, ub, rb = split_version(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _compare_part(ua, ub) or _compare_part(ra, rb)


version_key = functools.cmp_to_key(compare_versions)


def upstream_numbers(version: str) -> tuple[int, ...]:
    """The kernel's release numbers in a package version or a spec: `7.3.4-1~bpo13+1` ->
    (7, 3, 4), `6.12` -> (6, 12); () when it does not start with them."""
    m = _NUMBERS.match(split_version(version)[1] if ":" in version else version)
    if not m:
        return ()
    return tuple(int(g) for g in m.groups() if g is not None)


def series_of(version: str) -> str:
    """`6.12.117-1` -> `6.12`."""
    numbers = upstream_numbers(version)
    return ".".join(str(n) for n in numbers[:2])
