"""What the archive offers: kernels as package sets, read from `apt-cache` output, and the
choice of one for a spec (the newest that matches, or a one-line error naming the nearest).

A kernel comes in one of two shapes, told apart by the packages the archive holds, not by
its version number:
- `image`: one package, `linux-image-R-unsigned` (kernel in /boot, modules under lib/modules);
- `split` (from 6.19/7.x): `linux-binary-unsigned-R` or `linux-binary-R` (the kernel, under
  /usr/lib/modules/R), `linux-modules-R`, `linux-base-R` (modules.builtin, modules.order).
R is the kernel release, of the plain flavour (`-amd64`, not `-cloud-amd64` or `-rt-amd64`).
"""

import re
from dataclasses import dataclass

from plugpull.errors import UsageError
from plugpull.kernels.naming import FLAVOUR, DebianKernel, Match
from plugpull.kernels.versions import series_of, upstream_numbers, version_key

_RELEASE = rf"(?P<release>\d[0-9a-z.+~-]*?-{FLAVOUR})"
# role -> name patterns, in order of preference; a shape is complete when every role has one.
SHAPES = {
    "image": {"kernel": (rf"linux-image-{_RELEASE}-unsigned",)},
    "split": {"kernel": (rf"linux-binary-unsigned-{_RELEASE}", rf"linux-binary-{_RELEASE}"),
              "modules": (rf"linux-modules-{_RELEASE}",),
              "base": (rf"linux-base-{_RELEASE}",)},
}
OTHER_FLAVOURS = ("-cloud-", "-rt-")
NAME_PREFIXES = ("linux-image-", "linux-binary-", "linux-modules-", "linux-base-")


@dataclass(frozen=True)
class Offer:
    """One kernel the archive offers: its release, package version, suites and packages."""

    release: str
    version: str
    suites: tuple[str, ...]
    packages: tuple[str, ...]
    shape: str

    @property
    def series(self) -> str:
        return series_of(self.version)

    @property
    def suite(self) -> str:
        return self.suites[0]


def role_of(name: str) -> tuple[str, str, int, str] | None:
    """(shape, role, preference, release) of a package name, or None for any other package."""
    if any(f in name for f in OTHER_FLAVOURS):
        return None
    for shape, roles in SHAPES.items():
        for role, patterns in roles.items():
            for rank, pattern in enumerate(patterns):
                m = re.fullmatch(pattern, name)
                if m:
                    return shape, role, rank, m.group("release")
    return None


def kernel_names(names) -> list[str]:
    """The package names (from `apt-cache pkgnames linux-`) that may belong to a kernel."""
    return sorted(n for n in names if role_of(n) is not None)


def parse_madison(text: str) -> list[tuple[str, str, str]]:
    """(package, version, suite) of each `apt-cache madison` line:
    `linux-base-7.3.4+deb13-amd64 | 7.3.4-1~bpo13+1 | http://archive.invalid/debian trixie-backports/main amd64 Packages`."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2].endswith("Packages"):
            suite = parts[2].split()[1].split("/")[0]
            out.append((parts[0], parts[1], suite))
    return out


def offers_from(madison: list[tuple[str, str, str]]) -> list[Offer]:
    """Complete package sets: per (shape, release, version), a package for every role."""
    found: dict = {}
    for name, version, suite in madison:
        known = role_of(name)
        if known is None:
            continue
        shape, role, rank, release = known
        entry = found.setdefault((shape, release, version), {"roles": {}, "suites": []})
        if role not in entry["roles"] or rank < entry["roles"][role][0]:
            entry["roles"][role] = (rank, name)
        if suite not in entry["suites"]:
            entry["suites"].append(suite)
    offers = []
    for (shape, release, version), entry in found.items():
        roles = SHAPES[shape]
        if set(entry["roles"]) == set(roles):
            packages = tuple(entry["roles"][r][1] for r in roles)
            offers.append(Offer(release, version, tuple(entry["suites"]), packages, shape))
    return sorted(offers, key=lambda o: version_key(o.version))


def newest_per_series(offers: list[Offer]) -> list[Offer]:
    newest: dict[str, Offer] = {}
    for o in sorted(offers, key=lambda o: version_key(o.version)):
        newest[o.series] = o
    return sorted(newest.values(), key=lambda o: upstream_numbers(o.version))


def choose(spec: DebianKernel, offers: list[Offer], where: str = "the archive", flag: str = "--kernel") -> Offer:
    """The newest offer the spec names; a `UsageError` naming the nearest one otherwise, and
    `flag`, what gave the spec (`--kernel`, or `kernels build` for its SPEC)."""
    matching = [o for o in offers if spec.matches(o.release, o.version)]
    if matching:
        return max(matching, key=lambda o: version_key(o.version))
    raise UsageError(not_offered(spec, offers, where, flag))


def nearest(spec: DebianKernel, offers: list[Offer]) -> Offer | None:
    """The offer whose release numbers are closest to the spec's, major first; the newer on a tie."""
    wanted = spec.numbers

    def distance(o: Offer):
        have = upstream_numbers(o.version)
        return tuple(abs(a - (have[i] if i < len(have) else 0)) for i, a in enumerate(wanted))

    best = None
    for o in sorted(offers, key=lambda o: version_key(o.version), reverse=True):
        if best is None or distance(o) < distance(best):
            best = o
    return best


def not_offered(spec: DebianKernel, offers: list[Offer], where: str, flag: str = "--kernel") -> str:
    near = nearest(spec, offers)
    if near is None:
        return f"{flag} {spec}: {where} offers no kernel at all"
    named = f"debian:{near.series}" if spec.match is Match.SERIES else f"debian:{near.version}"
    return (f"{flag} {spec}: no such kernel in {where}; the nearest offered is {named} "
            f"({near.release}, {near.version}, {near.suite})")
