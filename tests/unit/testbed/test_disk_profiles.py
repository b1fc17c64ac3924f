"""Disk profiles from a drive's datasheet figures (seek, rpm), and the values refused."""

import pytest

from plugpull.cli import main
from plugpull.errors import UsageError
from plugpull.testbed.profiles import load_profiles


def _load(tmp_path, text):
    path = tmp_path / "disks.toml"
    path.write_text(text)
    return load_profiles(path)


def test_the_seeds_drives_cost_a_seek_and_half_a_rotation():
    profiles = load_profiles()
    laptop, server = profiles["laptop-5400"], profiles["server-7200"]
    assert round(laptop.rotation_ms, 1) == 5.6 and (laptop.flush_ms, laptop.write_through_ms) == (18, 18)
    assert round(server.rotation_ms, 1) == 4.2 and (server.flush_ms, server.write_through_ms) == (13, 13)
    assert laptop.source and server.source, "each drive profile says where its figures come from"
    assert profiles["hdd"].flush_ms == 10 and profiles["hdd"].rpm == 0


def test_a_drive_profile_delays_flushes_with_the_cache_on_and_writes_with_it_off():
    laptop = load_profiles()["laptop-5400"]
    assert laptop.dm_table(100, "/dev/sda", write_cache=True, flushes_honoured=True).endswith(
        "/dev/sda 0 0 /dev/sda 0 18")
    assert laptop.delays(write_cache=False, flushes_honoured=True) == (18, 0)
    assert laptop.delays(write_cache=True, flushes_honoured=False) == (0, 0)


def test_whole_numbers_are_taken_as_figures(tmp_path):
    p = _load(tmp_path, "[d]\nseek_ms = 9\nrpm = 10000\n")["d"]
    assert (p.flush_ms, p.seek_ms) == (12, 9.0)


@pytest.mark.parametrize("table, says", [
    ("[d]\nseek_ms = 12.0\n", "seek_ms and rpm go together"),
    ("[d]\nseek_ms = 12.0\nrpm = 0\n", "seek_ms and rpm go together"),
    ("[d]\nseek_ms = 12.0\nrpm = 5400\nflush_ms = 5\n", "not both"),
    ("[d]\nseek_ms = -1.0\nrpm = 5400\n", "seek_ms"),
    ("[d]\nseek_ms = 12.0\nrpm = \"5400\"\n", "rpm"),
    ("[d]\nseek_ms = 12.0\nrpm = 99999\n", "rpm"),
    ("[d]\nflush_ms = 10\nsource = 1\n", "source"),
    ("[d\nflush_ms = 10\n", "not valid TOML"),
])
def test_a_bad_figure_is_named(tmp_path, table, says):
    with pytest.raises(UsageError, match=says):
        _load(tmp_path, table)


def test_an_unknown_disk_profile_exits_2(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["matrix", "--disk-profile", "floppy", "--fs", "xfs", "--mode", "barrier"])
    assert exited.value.code == 2 and "floppy" in capsys.readouterr().err
