"""plugpull's own apt, without the network: its config and command line never point at the
host's apt, the host's archive is read from its sources, apt's failures are read right."""

import re
from pathlib import Path

import pytest

from plugpull.errors import UsageError
from plugpull.kernels.apt import HOST_APT_DIRS, Apt, host_paths, update_errors
from plugpull.kernels.sources import SUITES, Archive, host_archive, main_archive, parse_config_dump, \
    parse_sources

KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
MIRROR = "http://archive.invalid/debian"


@pytest.fixture
def apt(tmp_path) -> Apt:
    return Apt(tmp_path / "kernels" / "apt", Archive(MIRROR, KEYRING, SUITES,
                                                      (("Acquire::Check-Valid-Until", "false"),)))


def _points_at_host(text: str) -> list[str]:
    """The paths in `text` (words, `-o K=V` values, quoted config values) inside the host's apt."""
    words = re.split(r'[\s="]+', text)
    return [w for w in words for d in HOST_APT_DIRS if w == d or w.startswith(d + "/")]


def test_the_command_line_and_config_never_name_the_hosts_apt(apt, tmp_path):
    argv = apt.argv("apt-get", "-q", "update")
    assert argv[0] == "apt-get" and argv[-2:] == ["-q", "update"]
    assert _points_at_host(" ".join(argv)) == [] and _points_at_host(apt.config_text()) == []
    options = dict(a.split("=", 1) for a in argv[1:-2] if a != "-o")
    assert set(options) == {"Dir::State", "Dir::State::status", "Dir::Cache", "Dir::Etc::SourceList",
                            "Dir::Etc::SourceParts", "Dir::Etc::Parts"}
    assert all(Path(v).is_relative_to(apt.root) for v in options.values())
    assert apt.env()["APT_CONFIG"] == str(apt.config_file) and apt.config_file.is_relative_to(apt.root)


def test_the_config_reads_no_host_part_and_keeps_the_carried_settings(apt):
    text = apt.config_text()
    assert 'Dir::Etc::main "/dev/null";' in text
    assert f'Dir::Etc::Parts "{apt.root}/etc/apt.conf.d";' in text
    assert 'Acquire::Check-Valid-Until "false";' in text
    sources = apt.sources_text()
    assert "Suites: bullseye bookworm bookworm-backports trixie trixie-backports sid\n" in sources
    assert f"Signed-By: {KEYRING}\n" in sources and "Components: main\n" in sources


def test_setup_writes_only_under_its_root(apt, tmp_path):
    if not KEYRING.is_file():
        pytest.skip("no Debian archive keyring on this host")
    apt.setup()
    written = [p for p in tmp_path.rglob("*")]
    assert written and all(p.is_relative_to(tmp_path) for p in written)
    assert apt.config_file.read_text() == apt.config_text()
    assert (apt.root / "state" / "status").read_text() == ""


@pytest.mark.parametrize("root", ["/var/lib/apt/plugpull", "/etc/apt", "/var/cache/apt/x"])
def test_a_root_inside_the_hosts_apt_is_refused(root):
    apt = Apt(Path(root), Archive(MIRROR))
    assert host_paths(apt.settings())
    with pytest.raises(UsageError, match="would use the host's"):
        apt.setup()


def test_the_text_checker_finds_a_host_path():
    assert _points_at_host('Dir::State "/var/lib/apt/";') == ["/var/lib/apt/"]
    assert _points_at_host("-o Dir::Cache=/var/cache/apt") == ["/var/cache/apt"]


def test_host_paths_passes_a_private_root(apt):
    assert host_paths(apt.settings()) == []
    assert host_paths([("Dir::State", "/var/lib/aptly")]) == []  # a prefix is not a folder


DEB822 = """\
Types: deb
# a comment line inside a stanza is not a field
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def test_the_hosts_archive_is_its_release_suite_with_main():
    entries = parse_sources(DEB822, deb822=True)
    assert len(entries) == 2
    assert main_archive(entries) == ("http://mirror.example/debian", "/usr/share/keyrings/debian-archive-keyring.gpg")
    assert main_archive(entries[1:]) is None  # security alone is not the archive


def test_one_line_sources():
    text = ("# deb http://old.example/debian bullseye main\n"
            "deb [arch=amd64 signed-by=/etc/apt/keyrings/d.gpg] http://m.example/debian/ trixie main contrib\n")
    assert main_archive(parse_sources(text, deb822=False)) == ("http://m.example/debian", "/etc/apt/keyrings/d.gpg")


def test_config_dump_values():
    dump = 'Acquire::Check-Valid-Until "false";\nAcquire::http::Proxy "http://proxy:3128";\nAPT::X "1";\n'
    assert parse_config_dump(dump, ("Acquire::Check-Valid-Until", "Acquire::http::Proxy", "Acquire::Retries")) == [
        ("Acquire::Check-Valid-Until", "false"), ("Acquire::http::Proxy", "http://proxy:3128")]


UNREACHABLE = """\
Err:1 http://127.0.0.1:9/debian bullseye InRelease
  Could not connect to 127.0.0.1:9 (127.0.0.1). - connect (111: Connection refused)
Err:2 http://127.0.0.1:9/debian bookworm InRelease
  Unable to connect to 127.0.0.1:9:
W: Failed to fetch http://127.0.0.1:9/debian/dists/bullseye/InRelease  Could not connect to 127.0.0.1:9
"""
EXPIRED = "E: Release file for http://archive.invalid/debian/dists/sid/InRelease is expired (invalid since 18d)."


def test_update_errors_name_the_failed_suites():
    failed, messages = update_errors(UNREACHABLE)
    assert failed == ["bullseye", "bookworm"] and messages[0].startswith("W: Failed to fetch")
    assert update_errors(EXPIRED) == (["sid"], [EXPIRED])
    assert update_errors("Get:1 http://archive.invalid/debian sid InRelease [193 kB]\n") == ([], [])


def test_the_archive_is_the_hosts_or_the_variables(tmp_path, monkeypatch):
    monkeypatch.delenv("PLUGPULL_DEBIAN_MIRROR", raising=False)
    (tmp_path / "debian.sources").write_text(DEB822)
    assert host_archive([tmp_path]).uri == "http://mirror.example/debian"
    monkeypatch.setenv("PLUGPULL_DEBIAN_MIRROR", MIRROR + "/")
    assert host_archive([tmp_path]).uri == MIRROR


def test_no_archive_anywhere_is_one_line_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("PLUGPULL_DEBIAN_MIRROR", raising=False)
    (tmp_path / "other.list").write_text("deb http://other.example/x nodistro-extra contrib\n")
    with pytest.raises(UsageError, match="set PLUGPULL_DEBIAN_MIRROR") as e:
        host_archive([tmp_path, tmp_path / "sources.list"])
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("value", ["ftp://m.example/debian", "archive.invalid/debian", "http://a b", "",
                                   "http://[::1", "http://", "https://:99999/debian", "http://m.example:port/",
                                   "file://m.example/debian", "file:/nonexistent/debian"])
def test_a_mirror_that_is_no_address_is_refused(monkeypatch, value):
    monkeypatch.setenv("PLUGPULL_DEBIAN_MIRROR", value)
    with pytest.raises(UsageError, match="PLUGPULL_DEBIAN_MIRROR="):
        host_archive([])
