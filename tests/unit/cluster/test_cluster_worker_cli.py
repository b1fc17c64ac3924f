"""`plugpull worker` without a VM: `--backend libvirt` gives its rig the libvirt backend (and
the image a QEMU coordinator names, so its tasks pass the image check); a `--connect` that is
malformed, names another host or does not answer is refused in one line, exit 2, with
nothing made and no guest prepared."""

import socket
from pathlib import Path

import pytest

from tests.cli_run import exit_code
import plugpull.cluster.reach as reach
import plugpull.cluster.serve as serve
import plugpull.cluster.worker as worker
import plugpull.guest.backends as backends
import plugpull.guest.rig as guest_rig
from plugpull.cli import main
from plugpull.cluster.worker import PlugpullPlugin, check_named
from plugpull.errors import InfraError
from plugpull.guest.contract.config import Accel
from plugpull.guest.image.build import GuestImage, KernelSource

LOOPBACK = "tcp://127.0.0.1:8786"


def image_of(kernel: KernelSource | None) -> GuestImage:
    """What the fake image build gives: an image keyed by the kernel it was built for."""
    name = "host" if kernel is None else f"{kernel.kernel.name}-{kernel.release}"
    return GuestImage(f"key-of-{name}", Path("/k"), Path("/i"), "6.12")


class FakeLibvirt:
    name = "libvirt"

    def __init__(self, uri: str):
        self.uri = uri


@pytest.fixture
def worker_started(monkeypatch):
    """What `plugpull worker` would run: [(backend name, uri)] prepared, the kernel each image
    was built for, and the rig and work dir each worker was given; no scheduler is asked and
    no guest boots."""
    seen = {"prepared": [], "built": [], "workers": []}

    def prepare_backend(name, uri=None):
        seen["prepared"].append((name, uri))
        return backends.Prepared(FakeLibvirt(uri) if name == "libvirt" else guest_rig.QEMU)

    monkeypatch.setattr(backends, "prepare_backend", prepare_backend)
    monkeypatch.setattr(guest_rig, "build_image", lambda kernel: seen["built"].append(kernel) or image_of(kernel))
    monkeypatch.setattr(guest_rig, "resolve_accel", lambda accel, image: type("R", (), {"accel": Accel.TCG}))
    monkeypatch.setattr(serve, "run_worker", lambda address, workdir, rig, sec, announce: seen["workers"].append(
        (rig, workdir)))
    monkeypatch.setattr(reach, "probe", lambda *args: None)  # as if the scheduler answered
    return seen


def test_a_worker_with_backend_libvirt_checks_on_this_hosts_libvirt(worker_started, tmp_path, monkeypatch):
    kernel = KernelSource(tmp_path / "vmlinux-test", tmp_path / "6.12.9-test")
    kernel.kernel.write_bytes(b"\x7fELF" + bytes(60))
    kernel.modules_dir.mkdir()
    argv = ["worker", "--scheduler", LOOPBACK, "--workdir", str(tmp_path / "w"),
            "--kernel", str(kernel.kernel), "--modules", str(kernel.modules_dir)]
    assert main([*argv, "--backend", "libvirt", "--connect", "qemu:///system"]) == 0
    assert main(argv) == 0  # a QEMU worker, as the coordinator's rig is
    assert worker_started["prepared"] == [("libvirt", "qemu:///system"), ("qemu", None)]
    assert worker_started["built"] == [kernel, kernel]  # the image of --kernel, whatever the backend
    (on_libvirt, workdir), (on_qemu, _) = worker_started["workers"]
    assert isinstance(on_libvirt.backend, FakeLibvirt) and on_libvirt.backend.uri == "qemu:///system"
    assert workdir == tmp_path / "w" and on_libvirt.accel is Accel.TCG
    assert on_libvirt.image.key == on_qemu.image.key == "key-of-vmlinux-test-6.12.9-test"
    monkeypatch.setattr(worker, "the_plugin", lambda: PlugpullPlugin(workdir, on_libvirt))
    with pytest.raises(InfraError, match="worker's guest image key-of-vmlinux-test-6.12.9-test is not the "
                                         "coordinator's key-of-host"):
        check_named(b"", [], {}, image_of(None).key)  # a coordinator that booted the host's kernel


def _unanswered_port() -> int:
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BAD_CONNECT = [
    ("http://rack2/", "expected a libvirt QEMU URI"),
    ("qemu+ssh://root@rack2/system", "start a worker on that host"),
]


@pytest.mark.parametrize("uri, said", BAD_CONNECT, ids=["malformed", "another host"])
def test_a_bad_connect_is_refused_in_one_line_before_anything_is_made(uri, said, worker_started, tmp_path, capsys):
    workdir = tmp_path / "w"
    assert exit_code(["worker", "--scheduler", LOOPBACK, "--workdir", str(workdir), "--backend", "libvirt",
                       "--connect", uri]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert worker_started["prepared"] == [] and worker_started["workers"] == []
    assert not workdir.exists()


@pytest.fixture
def no_rig(monkeypatch):
    def prepare_rig(*args):
        raise AssertionError("a guest was to be prepared")

    monkeypatch.setattr(guest_rig, "prepare_rig", prepare_rig)


def test_a_connect_nobody_answers_is_refused_in_one_line(no_rig, tmp_path, capsys):
    pytest.importorskip("libvirt")
    workdir = tmp_path / "w"
    uri = f"qemu+tcp://127.0.0.1:{_unanswered_port()}/system"
    assert main(["worker", "--scheduler", LOOPBACK, "--workdir", str(workdir), "--backend", "libvirt",
                 "--connect", uri]) == 2
    err = capsys.readouterr().err
    assert f"bad --connect {uri}" in err and len(err.strip().splitlines()) == 1, err
    assert not workdir.exists()


def test_connect_without_backend_libvirt_is_refused(no_rig, tmp_path, capsys):
    assert main(["worker", "--scheduler", LOOPBACK, "--workdir", str(tmp_path / "w"), "--connect",
                 "qemu:///system"]) == 2
    assert "--connect needs --backend libvirt" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()
