"""Debian kernels by version, without a VM or the network: specs, dpkg's version order, the
archive's offers from apt-cache output, the nearest-offered message, plugpull's own apt
command line, and the kernels cache (synthetic .debs unpacked and indexed for real)."""

import pytest

from plugpull.errors import UsageError
from plugpull.kernels.offers import choose, kernel_names, newest_per_series, offers_from, parse_madison
from plugpull.kernels.option import kernel_option
from plugpull.kernels.naming import Match, parse_debian
from plugpull.kernels.versions import compare_versions, series_of, upstream_numbers

ARCHIVE = "http://archive.invalid/debian"


def madison(*rows) -> str:
    return "".join(f"{name} | {version} | {ARCHIVE} {suite}/main amd64 Packages\n" for name, version, suite in rows)


MADISON = madison(
    ("linux-image-5.10.0-32-amd64-unsigned", "5.10.223-1", "bullseye"),
    ("linux-image-5.10.0-32-cloud-amd64-unsigned", "5.10.223-1", "bullseye"),
    ("linux-image-6.1.0-50-amd64-unsigned", "6.1.176-1", "bookworm"),
    ("linux-image-6.12.9+deb13-amd64-unsigned", "6.12.9-1", "trixie"),
    ("linux-image-6.12.95+deb12-amd64-unsigned", "6.12.95-1~bpo12+1", "bookworm-backports"),
    ("linux-image-6.12.117+deb13-amd64-unsigned", "6.12.117-1", "trixie"),
    ("linux-image-6.12.117+deb13-rt-amd64-unsigned", "6.12.117-1", "trixie"),
    # 7.x: three packages; the unsigned binary preferred to the signed one
    ("linux-binary-7.3.4+deb13-amd64", "7.3.4-1~bpo13+1", "trixie-backports"),
    ("linux-binary-unsigned-7.3.4+deb13-amd64", "7.3.4-1~bpo13+1", "trixie-backports"),
    ("linux-modules-7.3.4+deb13-amd64", "7.3.4-1~bpo13+1", "trixie-backports"),
    ("linux-base-7.3.4+deb13-amd64", "7.3.4-1~bpo13+1", "trixie-backports"),
    ("linux-base-amd64", "7.3.4-1~bpo13+1", "trixie-backports"),
    # a binary whose modules and base are gone from the archive: not a kernel one can boot
    ("linux-binary-7.1.13+deb13-amd64", "7.1.13-1~bpo13+1", "trixie-backports"),
    ("linux-binary-7.2.13+deb14-amd64", "7.2.13-1", "sid"),
    ("linux-modules-7.2.13+deb14-amd64", "7.2.13-1", "sid"),
    ("linux-base-7.2.13+deb14-amd64", "7.2.13-1", "sid"),
)


def offers():
    return offers_from(parse_madison(MADISON))


# --- specs -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, match", [
    ("debian:6.12", Match.SERIES), ("debian:7.3", Match.SERIES), ("debian:5.10", Match.SERIES),
    ("debian:6.12.117", Match.UPSTREAM), ("debian:6.12.117-1", Match.VERSION),
    ("debian:7.3.4-1~bpo13+1", Match.VERSION), ("debian:6.12.117+deb13-amd64", Match.RELEASE),
    ("debian:5.10.0-32-amd64", Match.RELEASE),
])
def test_specs_parse(text, match):
    spec = parse_debian(text)
    assert spec.match is match and str(spec) == text


@pytest.mark.parametrize("text, message", [
    ("debian:", "names no version"), ("debian:  ", "names no version"),
    ("debian:abc", "'abc' is not a kernel version"), ("debian:6", "'6' is not a kernel version"),
    ("debian:6.12;rm -rf /", "is not a kernel version"), ("debian:6.12.1.2", "neither a series"),
    ("ubuntu:6.1", "not a Debian kernel"),
])
def test_bad_specs_are_one_line_usage_errors(text, message):
    with pytest.raises(UsageError, match=message) as e:
        parse_debian(text)
    assert "\n" not in str(e.value)


def test_a_debian_kernel_brings_its_own_modules(tmp_path):
    with pytest.raises(UsageError, match="brings its own modules: drop --modules"):
        kernel_option("debian:6.12", tmp_path)
    with pytest.raises(UsageError, match="names no version"):
        kernel_option("debian:", None)
    with pytest.raises(UsageError, match="--modules goes with a kernel file"):
        kernel_option("host", tmp_path)
    with pytest.raises(UsageError, match="unknown kernel source 'ubuntu'"):
        kernel_option("ubuntu:6.1", None)
    assert kernel_option(None, None) is None and kernel_option("host", None) is None


# --- versions ----------------------------------------------------------------------------

@pytest.mark.parametrize("lower, higher", [
    ("6.12.9-1", "6.12.10-1"), ("6.12.95-1~bpo12+1", "6.12.95-1"), ("1.0~rc1", "1.0"),
    ("6.1.170-3", "6.1.176-1"), ("7.3.4-1~bpo13+1", "1:0.1-1"), ("1.0-1", "1.0-1+b1"),
    ("1.0a", "1.0b"), ("1.0", "1.0a"), ("1.0+x", "1.0.1"),
])
def test_dpkg_order(lower, higher):
    assert compare_versions(lower, higher) < 0 < compare_versions(higher, lower)
    assert compare_versions(lower, lower) == 0


def test_equal_versions_by_dpkg():
    assert compare_versions("1.00", "1.0") == 0 and compare_versions("0:1.0-1", "1.0-1") == 0


def test_what_a_version_says_of_its_release():
    assert upstream_numbers("7.3.4-1~bpo13+1") == (7, 3, 4) and series_of("7.3.4-1~bpo13+1") == "7.3"
    assert series_of("6.12.117-1") == "6.12" and upstream_numbers("abc") == ()


# --- offers ------------------------------------------------------------------------------

def test_offers_are_complete_package_sets_of_the_plain_flavour():
    found = {(o.release, o.version): o for o in offers()}
    assert ("5.10.0-32-amd64", "5.10.223-1") in found
    assert not any("cloud" in r or "-rt-" in r for r, _ in found)
    assert not any(r.startswith("7.1.") for r, _ in found), "a binary without modules and base was offered"
    new = found[("7.3.4+deb13-amd64", "7.3.4-1~bpo13+1")]
    assert new.shape == "split" and new.suite == "trixie-backports"
    assert new.packages == ("linux-binary-unsigned-7.3.4+deb13-amd64", "linux-modules-7.3.4+deb13-amd64",
                            "linux-base-7.3.4+deb13-amd64")
    assert found[("6.12.117+deb13-amd64", "6.12.117-1")].packages == ("linux-image-6.12.117+deb13-amd64-unsigned",)


def test_kernel_names_filter_the_package_names():
    names = ["linux-image-amd64", "linux-base-amd64", "linux-image-6.1.0-50-amd64-unsigned",
             "linux-image-6.1.0-50-amd64", "linux-headers-6.1.0-50-amd64", "linux-modules-7.3.4+deb13-amd64",
             "linux-binary-7.3.4+deb13-cloud-amd64"]
    assert kernel_names(names) == ["linux-image-6.1.0-50-amd64-unsigned", "linux-modules-7.3.4+deb13-amd64"]


@pytest.mark.parametrize("text, version", [
    ("debian:6.12", "6.12.117-1"),  # by dpkg's order: 6.12.9 is older, not newer, than 6.12.117
    ("debian:6.12.95", "6.12.95-1~bpo12+1"), ("debian:6.12.9-1", "6.12.9-1"), ("debian:7.3", "7.3.4-1~bpo13+1"),
    ("debian:7.2", "7.2.13-1"), ("debian:5.10", "5.10.223-1"), ("debian:6.12.117+deb13-amd64", "6.12.117-1"),
])
def test_choose_the_newest_that_matches(text, version):
    assert choose(parse_debian(text), offers()).version == version


def test_newest_per_series_in_release_order():
    assert [(o.series, o.version) for o in newest_per_series(offers())] == [
        ("5.10", "5.10.223-1"), ("6.1", "6.1.176-1"), ("6.12", "6.12.117-1"), ("7.2", "7.2.13-1"),
        ("7.3", "7.3.4-1~bpo13+1")]


@pytest.mark.parametrize("text, nearest", [
    ("debian:9.9", "the nearest offered is debian:7.3 (7.3.4+deb13-amd64"),
    ("debian:6.13", "the nearest offered is debian:6.12 (6.12.117+deb13-amd64"),
    ("debian:4.19", "the nearest offered is debian:5.10 (5.10.0-32-amd64"),
    ("debian:6.12.118", "the nearest offered is debian:6.12.117-1 ("),
    ("debian:7.3.4-2", "the nearest offered is debian:7.3.4-1~bpo13+1 ("),
    ("debian:7.1", "the nearest offered is debian:7.2 ("),
])
def test_an_unknown_version_names_the_nearest_offered(text, nearest):
    with pytest.raises(UsageError) as e:
        choose(parse_debian(text), offers(), "the archive")
    message = str(e.value)
    assert nearest in message and "\n" not in message and message.startswith(f"--kernel {text}: no such kernel")


def test_a_version_not_offered_names_what_gave_it():
    with pytest.raises(UsageError) as e:
        choose(parse_debian("debian:9.9", "kernels build"), offers(), "the archive", "kernels build")
    assert str(e.value).startswith("kernels build debian:9.9: no such kernel"), e.value


def test_an_empty_archive_says_so():
    with pytest.raises(UsageError, match="offers no kernel at all"):
        choose(parse_debian("debian:6.12"), [])
