"""The libvirt backend's pieces that need no daemon: URIs, the daemons' book, the options."""

import json
import os
import socket
import subprocess

import pytest

from tests.cli_run import run_cli
from plugpull.errors import UsageError
from plugpull.guest.libvirt import daemon as libvirtd
from plugpull.guest.libvirt.users import daemon_users
from plugpull.guest.backends import checked_uri, prepare_backend
from plugpull.guest.qemu.machine import QEMU


@pytest.mark.parametrize("uri", ["qemu:///system", "qemu:///session", "qemu+tcp://127.0.0.1/system",
                                 "qemu+ssh://root@host.example/system", "qemu+ssh://h/system?keyfile=/k"])
def test_good_uris(uri):
    assert checked_uri(uri) == uri


@pytest.mark.parametrize("uri", ["", "qemu://", "xen:///system", "http://x/", "qemu:///system junk",
                                 "qemu+tcp://h/other"])
def test_bad_uris_are_usage_errors(uri):
    with pytest.raises(UsageError, match="bad --connect"):
        checked_uri(uri)


def test_the_qemu_backend_takes_no_uri():
    assert prepare_backend("qemu").backend is QEMU
    with pytest.raises(UsageError, match="--connect needs --backend libvirt"):
        prepare_backend("qemu", "qemu:///system")
    with pytest.raises(UsageError, match="bad --backend"):
        prepare_backend("xen")


def test_a_stale_socket_file_is_not_a_running_daemon(tmp_path):
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        s.listen()
        assert libvirtd.socket_alive(path)
    assert path.exists() and not libvirtd.socket_alive(path)
    assert not libvirtd.socket_alive(tmp_path / "absent")


def test_only_the_last_user_stops_the_daemons_plugpull_started(tmp_path):
    ours = subprocess.Popen(["sleep", "60"])
    theirs = subprocess.Popen(["sleep", "60"])
    users_file = tmp_path / "users"
    try:
        with daemon_users(users_file) as users:
            users.started["virtlogd"] = ours.pid
            first, second = users.join(), users.join()
        libvirtd.LocalDaemons(users_file, _user=first).stop()
        assert ours.poll() is None, "a daemon still in use by another user was stopped"
        last = libvirtd.LocalDaemons(users_file, _user=second)
        last.stop()
        assert ours.wait(10) != 0
        assert theirs.poll() is None, "a process plugpull did not start was stopped"
        last.stop()  # left already: no error
        with daemon_users(users_file) as users:
            assert users.started == {} and users.active == []
    finally:
        for p in (ours, theirs):
            p.kill()
            p.wait()


def test_a_dead_user_is_dropped_from_the_users_file(tmp_path):
    users_file = tmp_path / "users"
    dead = subprocess.Popen(["true"])
    dead.wait()
    users_file.write_text(json.dumps({"started": {}, "users": [f"{dead.pid}:1:gone", "junk", 7]}))
    with daemon_users(users_file) as users:
        assert users.active == []
        me = users.join()
    with daemon_users(users_file) as users:
        assert users.active == [me]


def test_a_zombie_is_not_alive():
    assert libvirtd.pid_alive(os.getpid())
    child = subprocess.Popen(["true"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    assert not libvirtd.pid_alive(child.pid)
    child.wait()


def test_doctor_rows_say_what_is_missing(monkeypatch):
    monkeypatch.setattr(libvirtd.shutil, "which", lambda name: None)
    needed = libvirtd.doctor_rows(needed=True)
    optional = libvirtd.doctor_rows(needed=False)
    assert needed[0][0] == "libvirt" and "libvirt-daemon-system" in needed[0][1] and not needed[0][2]
    assert optional[0][2]


@pytest.mark.parametrize("argv, message", [
    (["crash", "--backend", "xen"], "invalid choice"),
    (["crash", "--backend", "libvirt", "--connect", "http://x/"], "libvirt QEMU URI"),
    (["crash", "--connect", "qemu:///system"], "--connect needs --backend libvirt"),
    (["shell", "--backend", "libvirt"], "plugpull shell needs --backend qemu"),
    (["crash", "--backend", "libvirt", "--connect", "qemu+ssh://root@host.example/system"],
     "guests that record run on this machine"),
    (["crash", "--hosts", "qemu+tcp://127.0.0.1:1/system"], "bad --hosts qemu+tcp://127.0.0.1:1/system"),
    (["matrix", "--hosts", "qemu:///system,http://x/"], "libvirt QEMU URI"),
    (["crash", "--hosts", "qemu:///system,qemu:///system"], "names a host twice"),
])
def test_bad_backend_options_are_one_line_exit_2(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
