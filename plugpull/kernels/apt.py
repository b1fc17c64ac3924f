"""plugpull's own apt: a sources list, state and cache of its own under the kernels cache.

Asking Debian's archive for kernels never reads or changes the host's apt setup: apt runs
with `APT_CONFIG` naming plugpull's config file, which points every `Dir::Etc` entry (the
config parts, sources, preferences, keys), `Dir::State` and `Dir::Cache` at plugpull's
folders, so the host's `apt.conf.d` hooks and pins are never read and its package lists
never touched. What it takes from the host, read-only, is in `sources`.
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
from plugpull.kernels.sources import ARCH, Archive

log = logging.getLogger(__name__)

HOST_APT_DIRS = ("/etc/apt", "/var/lib/apt", "/var/cache/apt", "/var/lib/dpkg")
INDEX_MAX_AGE = 24 * 3600
UPDATE_TIMEOUT = 600


class ArchiveUnreachable(InfraError):
    """Debian's archive did not answer (no network, a wrong mirror, a refused signature)."""


def _quote(value) -> str:
    return '"' + str(value).replace('"', "") + '"'


@dataclass(frozen=True)
class Apt:
    """apt under plugpull's own config, state and cache, in `root`."""

    root: Path
    archive: Archive
    types: tuple[str, ...] = ("deb",)  # ("deb-src",): the source packages' lists

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
        return (f"Types: {' '.join(self.types)}\nURIs: {self.archive.uri}\nSuites: {' '.join(self.archive.suites)}\n"
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
