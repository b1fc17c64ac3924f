"""Where Debian's archive is: read, never written, from the host's apt sources.

The archive's address is the host's own (the first `deb` entry of a release's own suite with
its `main` component, in `/etc/apt/sources.list`, `sources.list.d/*.list` or `*.sources`);
`PLUGPULL_DEBIAN_MIRROR` overrides it. plugpull knows no archive address of its own: with
neither, it says so and asks for the variable. From the host it also takes the archive's
keyring and how apt reaches it (a few `Acquire::` settings: proxies, and whether an expired
Release file is accepted, as on a frozen mirror).
"""

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from plugpull.errors import UsageError

ARCH = "amd64"
SUITES = ("bullseye", "bookworm", "bookworm-backports", "trixie", "trixie-backports", "sid")
DEFAULT_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
HOST_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
MIRROR_VARIABLE = "PLUGPULL_DEBIAN_MIRROR"
SCHEMES = ("http://", "https://", "file:/")
CARRIED = ("Acquire::Check-Valid-Until", "Acquire::Check-Date", "Acquire::http::Proxy",
           "Acquire::https::Proxy", "Acquire::Retries")


@dataclass(frozen=True)
class Archive:
    """Where the kernels come from and how apt reaches it."""

    uri: str
    keyring: Path = DEFAULT_KEYRING
    suites: tuple[str, ...] = SUITES
    carried: tuple[tuple[str, str], ...] = ()  # the host's Acquire:: settings, as (key, value)


def parse_sources(text: str, deb822: bool, kind: str = "deb") -> list[dict]:
    """The `deb` (or `kind`) entries of a sources file: {uris, suites, components, signed_by}."""
    entries = []
    if deb822:
        for stanza in re.split(r"\n\s*\n", text):
            fields = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[:1].isspace():
                    continue
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.split()
            if kind in fields.get("types", ()) and fields.get("enabled", ["yes"]) != ["no"]:
                entries.append({"uris": fields.get("uris", []), "suites": fields.get("suites", []),
                                "components": fields.get("components", []),
                                "signed_by": (fields.get("signed-by") or [None])[0]})
        return entries
    for line in text.splitlines():
        m = re.match(rf"\s*{kind}\s+(?:\[([^]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)", line)
        if m:
            opts = dict(o.split("=", 1) for o in (m.group(1) or "").split() if "=" in o)
            entries.append({"uris": [m.group(2)], "suites": [m.group(3)], "components": m.group(4).split(),
                            "signed_by": opts.get("signed-by")})
    return entries


def main_archive(entries: list[dict]) -> tuple[str, str | None] | None:
    """(uri, keyring) of the first entry that serves a release's own suite (`bookworm`, not
    `bookworm-security` or `bookworm-updates`) with its main component."""
    for e in entries:
        if "main" in e["components"] and any("-" not in s for s in e["suites"]) and e["uris"]:
            return e["uris"][0].rstrip("/"), e["signed_by"]
    return None


def source_entries(sources=HOST_SOURCES) -> list[dict]:
    """The `deb` entries of the host's sources files (`*.list`, `*.sources`), in apt's order."""
    entries = []
    for place in sources:
        files = sorted(place.glob("*")) if place.is_dir() else [place]
        for f in files:
            if f.suffix in (".list", ".sources") and f.is_file():
                try:
                    text = f.read_text(errors="replace")
                except OSError:
                    continue
                entries += parse_sources(text, f.suffix == ".sources")
    return entries


def mirror_override() -> str | None:
    """`PLUGPULL_DEBIAN_MIRROR`, checked: an http(s) or file address."""
    value = os.environ.get(MIRROR_VARIABLE)
    if value is None:
        return None
    if not value.startswith(SCHEMES) or any(c.isspace() for c in value) or not well_formed(value):
        raise UsageError(f"{MIRROR_VARIABLE}={value[:80]!r}: expected an http://HOST[:PORT]/PATH, https:// or "
                         "file:/DIR address of a Debian archive")
    if value.startswith("file:") and not Path(urlsplit(value).path).is_dir():
        raise UsageError(f"{MIRROR_VARIABLE}={value[:80]!r}: no such directory")
    return value.rstrip("/")


def well_formed(address: str) -> bool:
    """An http(s) address with a host and a port that is a number (if any), or a file: one
    with a path: what apt would otherwise fail on as an archive it cannot reach (exit 3)."""
    try:
        parts = urlsplit(address)
        port = parts.port  # a ValueError when it is no number from 0 to 65535
    except ValueError:
        return False
    if parts.scheme == "file":
        return bool(parts.path) and not parts.netloc
    return bool(parts.hostname) and port != 0


def host_archive(sources=HOST_SOURCES) -> Archive:
    """The host's Debian archive, `PLUGPULL_DEBIAN_MIRROR` first; a `UsageError` without either."""
    found = main_archive(source_entries(sources))
    uri = mirror_override() or (found[0] if found else None)
    if uri is None:
        raise UsageError(f"no Debian archive in this host's apt sources ({', '.join(map(str, sources))}): "
                         f"set {MIRROR_VARIABLE} to one (http://HOST/debian)")
    keyring = found[1] if found and found[1] else None
    return Archive(uri, Path(keyring) if keyring else DEFAULT_KEYRING, SUITES, host_settings())


def host_settings() -> tuple[tuple[str, str], ...]:
    env = {k: v for k, v in os.environ.items() if k != "APT_CONFIG"}
    try:
        out = subprocess.run(["apt-config", "dump"], capture_output=True, text=True, env=env, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(parse_config_dump(out, CARRIED))


def parse_config_dump(text: str, keys) -> list[tuple[str, str]]:
    """The values of `keys` in `apt-config dump` output (`Key "value";` lines)."""
    wanted = {k.lower(): k for k in keys}
    found = []
    for line in text.splitlines():
        m = re.match(r'^(\S+) "(.*)";$', line)
        if m and m.group(1).lower() in wanted:
            found.append((wanted[m.group(1).lower()], m.group(2)))
    return found
