"""`plugpull shell`'s host side: a piped script read whole and bounded, run by the guest's `sh`;
a terminal's keys typed before the guest is up kept when it turns raw; the copy of the keys
ending when the guest does or when the terminal does."""

import io
import os
import pty
import subprocess

import pytest

from plugpull.cli.guests import pump, raw, read_script, run_script
from plugpull.errors import UsageError
from plugpull.guest.contract.channel import GuestResult


def test_a_script_is_read_whole_up_to_its_bound_and_refused_past_it():
    assert read_script(io.BytesIO(b"uname -r\nexit\n"), limit=14) == b"uname -r\nexit\n"
    assert read_script(io.BytesIO(b""), limit=14) == b""
    with pytest.raises(UsageError, match="over .* MiB"):
        read_script(io.BytesIO(b"uname -r\nexit\n!"), limit=14)


class Guest:
    def __init__(self, rc: int):
        self.files, self.commands, self.rc = {}, [], rc

    def write_file(self, path, data, mode=0o644):
        self.files[path] = data

    def run(self, command, *args, timeout=120.0):
        self.commands.append((command, timeout))
        return GuestResult(command, self.rc, b"6.1.0-56-amd64\n", b"note\n")


@pytest.mark.parametrize("rc", [0, 7])
def test_the_script_runs_whole_in_sh_without_a_time_bound_and_its_status_is_said(rc, capfd):
    guest = Guest(rc)
    run_script(guest, b"uname -r\nexit\n")
    assert list(guest.files.values()) == [b"uname -r\nexit\n"]
    assert guest.commands == [(f"sh {next(iter(guest.files))}", None)]
    out, err = capfd.readouterr()
    assert out == "6.1.0-56-amd64\n"
    assert err.startswith("note\n") and (f"status {rc}" in err) == (rc != 0)


def test_keys_typed_before_the_terminal_turns_raw_are_kept():
    """tty.setraw's default (TCSAFLUSH) drops them: `uname -r` became `e -r` that way."""
    typist, terminal = pty.openpty()
    try:
        os.write(typist, b"uname -r")  # a line not ended yet: held by the canonical terminal
        raw(terminal)
        assert os.read(terminal, 100) == b"uname -r"
        os.write(typist, b"\x03\x04")
        assert os.read(terminal, 100) == b"\x03\x04"  # Ctrl-C, Ctrl-D: keys for the guest
    finally:
        os.close(typist)
        os.close(terminal)


def test_the_keys_are_copied_until_the_terminal_ends_and_then_the_console_is_closed():
    keys, typed = os.pipe()
    console_end, console = os.pipe()
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        os.write(typed, b"uname -r\nexit\n")
        os.close(typed)
        with open(console, "wb") as sink:
            pump(keys, sink, sleeper.pid)
            assert sink.closed
        assert os.read(console_end, 100) == b"uname -r\nexit\n"
    finally:
        sleeper.kill()
        sleeper.wait()
        os.close(keys)
        os.close(console_end)


def test_the_copy_ends_when_the_guest_does_though_the_terminal_stays():
    keys, typed = os.pipe()
    done = subprocess.Popen(["true"])
    try:
        with open(os.devnull, "wb") as sink:
            pump(keys, sink, done.pid)
    finally:
        done.wait()
        os.close(keys)
        os.close(typed)
