"""plugpull's own apt: a sources list, state and cache of its own under the kernels cache.

Asking Debian's archive for kernels never reads or changes the host's apt setup: apt runs
with `APT_CONFIG` naming plugpull's config file, which points every `Dir::Etc` entry (the
config parts, sources, preferences, keys), `Dir::State` and `Dir::Cache` at plugpull's
folders, so the host's `apt.conf.d` hooks and pins are never read and its package lists
never touched. From the host it takes, read-only, the archive's address and keyring (its
sources) and how it reaches the archive (a few `Acquire::` settings: proxies, and whether an
expired Release file is accepted, as on a frozen mirror). `PLUGPULL_DEBIAN_MIRROR` overrides
the address.
"""

import logging
import os
import pwd
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import InfraError, ToolMissing, UsageError
from plugpull.files import atomic_write

log = logging.getLogger(__name__)

SUITES = ("bullseye", "bookworm", "bookworm-backports", "trixie", "trixie-backports", "sid")
ARCH = "amd64"
DEFAULT_URI = "http://deb.debian.org/debian"
DEFAULT_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
HOST_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
HOST_APT_DIRS = ("/etc/apt", "/var/lib/apt", "/var/cache/apt", "/var/lib/dpkg")
CARRIED = ("Acquire::Check-Valid-Until", "Acquire::Check-Date", "Acquire::http::Proxy",
           "Acquire::https::Proxy", "Acquire::Retries")
INDEX_MAX_AGE = 24 * 3600
UPDATE_TIMEOUT = 600


class ArchiveUnreachable(InfraError):
    """Debian's archive did not answer (no network, a wrong mirror, a refused signature)."""


@dataclass(frozen=True)
class Archive:
    """Where the kernels come from and how apt reaches it."""

    uri: str = DEFAULT_URI
    keyring: Path = DEFAULT_KEYRING
    suites: tuple[str, ...] = SUITES
    carried: tuple[tuple[str, str], ...] = ()  # the host's Acquire:: settings, as (key, value)


def parse_sources(text: str, deb822: bool) -> list[dict]:
    """The `deb` entries of a sources file: {uris, suites, components, signed_by}."""
    entries = []
    if deb822:
        for stanza in re.split(r"\n\s*\n", text):
            fields = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[:1].isspace():
                    continue
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.split()
            if "deb" in fields.get("types", ()) and fields.get("enabled", ["yes"]) != ["no"]:
                entries.append({"uris": fields.get("uris", []), "suites": fields.get("suites", []),
                                "components": fields.get("components", []),
                                "signed_by": (fields.get("signed-by") or [None])[0]})
        return entries
    for line in text.splitlines():
        m = re.match(r"\s*deb\s+(?:\[([^]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)", line)
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


def host_archive(sources=HOST_SOURCES) -> Archive:
    """The host's Debian archive (read from its sources, never written), or Debian's default."""
    entries = []
    for place in sources:
        files = sorted(place.glob("*")) if place.is_dir() else [place]
        for f in files:
            if f.suffix in (".list", ".sources") and f.is_file():
                entries += parse_sources(f.read_text(errors="replace"), f.suffix == ".sources")
    found = main_archive(entries)
    uri, keyring = found if found else (DEFAULT_URI, None)
    uri = os.environ.get("PLUGPULL_DEBIAN_MIRROR", uri).rstrip("/")
    return Archive(uri, Path(keyring) if keyring else DEFAULT_KEYRING, SUITES, _host_settings())


def _host_settings() -> tuple[tuple[str, str], ...]:
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


def _quote(value) -> str:
    return '"' + str(value).replace('"', "") + '"'


@dataclass(frozen=True)
class Apt:
    """apt under plugpull's own config, state and cache, in `root`."""

    root: Path
    archive: Archive

    @property
    def config_file(self) -> Path:
        return self.root / "etc" / "apt.conf"

    @property
    def sources_file(self) -> Path:
        return self.root / "etc" / "sources.list.d" / "plugpull-kernels.sources"

    @property
    def stamp(self) -> Path:
        return self.root / "state" / "updated"

    def settings(self) -> list[tuple[str, str]]:
        """Every setting of plugpull's apt config; the folders are all under `root`."""
        etc, state, cache = self.root / "etc", self.root / "state", self.root / "cache"
        user = pwd.getpwuid(os.getuid()).pw_name
        return [
            ("Dir::Etc", etc), ("Dir::Etc::main", "/dev/null"), ("Dir::Etc::Parts", etc / "apt.conf.d"),
            ("Dir::Etc::SourceList", etc / "sources.list"), ("Dir::Etc::SourceParts", etc / "sources.list.d"),
            ("Dir::Etc::Preferences", etc / "preferences"), ("Dir::Etc::PreferencesParts", etc / "preferences.d"),
            ("Dir::Etc::Trusted", etc / "trusted.gpg"), ("Dir::Etc::TrustedParts", etc / "trusted.gpg.d"),
            ("Dir::Etc::netrc", etc / "auth.conf"), ("Dir::Etc::netrcparts", etc / "auth.conf.d"),
            ("Dir::State", state), ("Dir::State::status", state / "status"),
            ("Dir::Cache", cache), ("Dir::Cache::srcpkgcache", ""), ("Dir::Log", self.root / "log"),
            ("APT::Architecture", ARCH), ("APT::Architectures::", ARCH), ("APT::Sandbox::User", user),
            ("Acquire::Languages", "none"), ("Acquire::PDiffs", "false"), ("Acquire::GzipIndexes", "true"),
            ("Acquire::http::Timeout", "30"),
            *self.archive.carried,
        ]

    def config_text(self) -> str:
        return "".join(f"{key} {_quote(value)};\n" for key, value in self.settings())

    def sources_text(self) -> str:
        return (f"Types: deb\nURIs: {self.archive.uri}\nSuites: {' '.join(self.archive.suites)}\n"
                f"Components: main\nArchitectures: {ARCH}\nSigned-By: {self.archive.keyring}\n")

    def setup(self) -> None:
        """Write the config and sources, make the folders; the state of an earlier run stays."""
        inside = host_paths(self.settings())
        if inside:
            raise UsageError(f"plugpull's apt would use the host's {inside[0][1]} ({inside[0][0]}): "
                             f"set PLUGPULL_CACHE elsewhere")
        if not self.archive.keyring.is_file():
            raise ToolMissing(str(self.archive.keyring), "install the Debian package debian-archive-keyring")
        for sub in ("etc/apt.conf.d", "etc/sources.list.d", "etc/preferences.d", "etc/trusted.gpg.d",
                    "etc/auth.conf.d", "state/lists/partial", "cache/archives/partial", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "state" / "status").touch()
        for path, text in ((self.config_file, self.config_text()), (self.sources_file, self.sources_text())):
            if not path.is_file() or path.read_text() != text:
                atomic_write(path, text)

    def argv(self, tool: str, *args: str) -> list[str]:
        """The command line; with `env()`, nothing of the host's apt is read but the
        keyring, nothing written outside `root`."""
        explicit = ("Dir::State", "Dir::State::status", "Dir::Cache", "Dir::Etc::SourceList",
                    "Dir::Etc::SourceParts", "Dir::Etc::Parts")
        settings = dict(self.settings())
        opts = [a for k in explicit for a in ("-o", f"{k}={settings[k]}")]
        return [tool, *opts, *args]

    def env(self) -> dict:
        return {**os.environ, "APT_CONFIG": str(self.config_file), "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"}

    def run(self, tool: str, *args: str, cwd: Path | None = None, timeout: float = UPDATE_TIMEOUT):
        argv = self.argv(tool, *args)
        log.debug("apt: %s", " ".join(argv))
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=self.env(), cwd=cwd, timeout=timeout)
        except FileNotFoundError:
            raise ToolMissing(tool, "plugpull fetches Debian kernels with apt") from None
        except subprocess.TimeoutExpired:
            raise ArchiveUnreachable(f"{tool} {args[0]} took over {timeout:.0f} s: "
                                     f"Debian's archive at {self.archive.uri} cannot be reached") from None

    def index_age(self) -> float | None:
        """Seconds since the package lists were last fetched; None when they never were."""
        try:
            return time.time() - self.stamp.stat().st_mtime
        except FileNotFoundError:
            return None

    def update(self) -> None:
        """Fetch the suites' package lists. Raises `ArchiveUnreachable` when every suite
        failed; some failing while others came is a warning."""
        self.setup()
        result = self.run("apt-get", "-q", "update")
        failed, messages = update_errors(result.stdout + result.stderr)
        reached = [s for s in self.archive.suites if s not in failed]
        if not reached or not list((self.root / "state" / "lists").glob("*_InRelease")):
            first = (messages or result.stderr.strip().splitlines() or ["apt-get update failed"])[0]
            raise ArchiveUnreachable(f"Debian's archive at {self.archive.uri} cannot be reached: {first}")
        if failed or result.returncode != 0:
            log.warning("apt-get update: suites %s failed: %s", ", ".join(failed) or "?",
                        (messages or ["?"])[0])
        self.stamp.touch()


def host_paths(settings) -> list[tuple[str, str]]:
    """The settings that point into the host's own apt or dpkg folders: none may."""
    def inside(value) -> bool:
        text = os.path.abspath(str(value)) if str(value).startswith("/") else ""
        return any(text == d or text.startswith(d + "/") for d in HOST_APT_DIRS)
    return [(k, str(v)) for k, v in settings if inside(v)]


def update_errors(output: str) -> tuple[list[str], list[str]]:
    """apt-get update's failures (it exits 0 when an index could not be fetched): the suites
    whose Release file failed (`Err:1 URI SUITE InRelease`), and the E:/W: lines."""
    failed, messages = [], []
    for line in output.splitlines():
        m = re.match(r"^Err:\d+ \S+ (\S+) (?:In)?Release", line)
        if m and m.group(1) not in failed:
            failed.append(m.group(1))
        elif line.startswith(("E: ", "W: Failed to fetch")):
            messages.append(line.strip())
        m = re.match(r"^E: .* for \S+/dists/([^/\s]+)/", line)
        if m and m.group(1) not in failed:
            failed.append(m.group(1))
    return failed, messages
