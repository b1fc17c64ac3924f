"""Bad input to `scheduler`, `worker`, `--cluster` and `kernels`, tried as a user would (as
tests/unit/misc/test_bad_input.py does for the other commands): each probe exits 2 with one line that
names what is wrong, no traceback, nothing created, no guest prepared, and the scheduler
never contacted (a probe that reaches it fails here)."""

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from tests.cli_run import exit_code, files_under
import plugpull.cluster.crash_coordinator as crash_coordinator
import plugpull.cluster.hunt_coordinator as hunt_coordinator
import plugpull.cluster.reach as reach
import plugpull.cluster.serve as serve
from plugpull import cli
from plugpull.guest import rig as rig_mod

TMP, TLS = "{tmp}", "{tls}"


class Contacted(BaseException):
    """Raised where the scheduler would be contacted, or a guest prepared."""


def _contacted(*args, **kwargs):
    raise Contacted("validation let this through to the network or a guest")


@dataclass(frozen=True)
class Probe:
    """`argv` ({tmp}: the test's directory, {tls}: good TLS files, {port}: a port in use);
    `names`: what the one line must mention."""

    id: str
    argv: list
    names: str
    setup: Callable[[Path], None] | None = None
    env: tuple = ()


def _file(name: str, data: str = "junk\n") -> Callable[[Path], None]:
    return lambda tmp: (tmp / name).write_text(data)


def _fifo(tmp: Path) -> None:
    os.mkfifo(tmp / "fifo")


GOOD_TLS = ["--tls-ca-file", f"{TLS}/a/ca.pem", "--tls-cert", f"{TLS}/a/member.pem", "--tls-key", f"{TLS}/a/member.key"]


def _tls(ca="a/ca.pem", cert="a/member.pem", key="a/member.key") -> list:
    return ["--tls-ca-file", f"{TLS}/{ca}", "--tls-cert", f"{TLS}/{cert}", "--tls-key", f"{TLS}/{key}"]


WORKER = ["worker", "--scheduler", "tcp://127.0.0.1:8786"]
CRASH = ["crash", "--cluster", "tcp://127.0.0.1:8786"]
HUNT = ["hunt", "--seq", "1", "--cluster", "tcp://127.0.0.1:8786"]

PROBES = [
    # scheduler
    Probe("scheduler-port-twice", ["scheduler", "--port", "0", "--port", "1"], "--port is given twice"),
    Probe("scheduler-host-twice", ["scheduler", "--host", "127.0.0.1", "--host", "::1"], "--host is given twice"),
    Probe("scheduler-port-arabic", ["scheduler", "--port", "٨٧٨٦"], "--port"),
    Probe("scheduler-port-fullwidth", ["scheduler", "--port", "８７８６"], "--port"),
    Probe("scheduler-host-no-such", ["scheduler", "--host", "bad host!"], "--host 'bad host!': not a host name"),
    Probe("scheduler-port-in-use", ["scheduler", "--port", "{port}"], "port {port} is in use on 127.0.0.1"),
    Probe("scheduler-tls-ca-junk", ["scheduler", *_tls(ca="junk")], "--tls-ca-file {tls}/junk: not a CA"),
    Probe("scheduler-tls-cert-junk", ["scheduler", *_tls(cert="junk")], "--tls-cert {tls}/junk"),
    Probe("scheduler-tls-key-junk", ["scheduler", *_tls(key="junk")], "--tls-key {tls}/junk"),
    Probe("scheduler-tls-key-mismatch", ["scheduler", *_tls(key="b/member.key")], "not a certificate and its key"),
    Probe("scheduler-tls-other-ca", ["scheduler", *_tls(ca="b/ca.pem")], "not accepted with --tls-ca-file"),
    Probe("scheduler-tls-missing", ["scheduler", *_tls(ca="none.pem")], "--tls-ca-file {tls}/none.pem: no such file"),
    # worker
    Probe("worker-notaport", ["worker", "--scheduler", "tcp://127.0.0.1:notaport"], "tcp://127.0.0.1:notaport"),
    Probe("worker-no-scheme", ["worker", "--scheduler", "127.0.0.1:8786"], "--scheduler '127.0.0.1:8786'"),
    Probe("worker-port-arabic", ["worker", "--scheduler", "tcp://127.0.0.1:٨٧٨٦"], "the port"),
    Probe("worker-port-zero", ["worker", "--scheduler", "tcp://127.0.0.1:0"], "the port"),
    Probe("worker-scheduler-twice", [*WORKER, "--scheduler", "tcp://127.0.0.1:8787"], "--scheduler is given twice"),
    Probe("worker-workdir-twice", [*WORKER, "--workdir", f"{TMP}/a", "--workdir", f"{TMP}/b"], "--workdir is given twice"),
    Probe("worker-workdir-file", [*WORKER, "--workdir", f"{TMP}/f"], "--workdir {tmp}/f: a regular file", _file("f")),
    Probe("worker-workdir-fifo", [*WORKER, "--workdir", f"{TMP}/fifo"], "--workdir {tmp}/fifo: a FIFO", _fifo),
    Probe("worker-workdir-proc", [*WORKER, "--workdir", "/proc/plugpull-worker"], "--workdir /proc/plugpull-worker"),
    Probe("worker-tls-junk", [*WORKER, *_tls(cert="junk")], "--tls-cert {tls}/junk"),
    Probe("worker-tls-other-ca", [*WORKER, *_tls(ca="b/ca.pem")], "not accepted with --tls-ca-file"),
    # --cluster, every other input checked before the scheduler is
    Probe("cluster-empty", ["crash", "--cluster", ""], "--cluster ''"),
    Probe("cluster-notaport", ["crash", "--cluster", "tcp://127.0.0.1:x"], "--cluster 'tcp://127.0.0.1:x'"),
    Probe("cluster-param", [*CRASH, "--param", "count=-5"], "count"),
    Probe("cluster-json", [*CRASH, "--json", f"{TMP}/nowhere/r.json"], "nowhere"),
    Probe("cluster-out", [*CRASH, "--out", f"{TMP}/f"], "--out {tmp}/f", _file("f")),
    Probe("cluster-kernel", [*CRASH, "--kernel", "nosuch:1"], "--kernel nosuch:1"),
    Probe("cluster-tls-junk", [*CRASH, *_tls(ca="junk")], "--tls-ca-file {tls}/junk"),
    # hunt --cluster: crash's refusals, and the hunt's own
    Probe("hunt-cluster-empty", ["hunt", "--seq", "1", "--cluster", ""], "--cluster ''"),
    Probe("hunt-cluster-notaport", ["hunt", "--seq", "1", "--cluster", "tcp://127.0.0.1:x"],
          "--cluster 'tcp://127.0.0.1:x'"),
    Probe("hunt-cluster-port-zero", ["hunt", "--seq", "1", "--cluster", "tcp://127.0.0.1:0"], "the port"),
    Probe("hunt-cluster-no-scheme", ["hunt", "--seq", "1", "--cluster", "127.0.0.1:8786"], "--cluster '127.0.0.1:8786'"),
    Probe("hunt-cluster-off-loopback", ["hunt", "--seq", "1", "--cluster", "tcp://192.0.2.1:8786"],
          "--cluster tcp://192.0.2.1:8786 is not on loopback"),
    Probe("hunt-cluster-libvirt", [*HUNT, "--backend", "libvirt"], "not with --backend libvirt"),
    Probe("hunt-cluster-connect", [*HUNT, "--connect", "qemu:///system"], "--connect"),
    Probe("hunt-tls-without-cluster", ["hunt", "--seq", "1", *GOOD_TLS], "the --tls-* options go with --cluster"),
    Probe("hunt-cluster-tls-junk", [*HUNT, *_tls(ca="junk")], "--tls-ca-file {tls}/junk"),
    Probe("hunt-cluster-tls-partial", [*HUNT, "--tls-cert", f"{TLS}/a/member.pem"], "TLS needs --tls-ca-file"),
    Probe("hunt-cluster-twice", [*HUNT, "--cluster", "tcp://127.0.0.1:8787"], "--cluster is given twice"),
    Probe("hunt-cluster-out-file", [*HUNT, "--out", f"{TMP}/f"], "--out {tmp}/f", _file("f")),
    Probe("hunt-cluster-out-foreign", [*HUNT, "--out", f"{TMP}"], "not a hunt's directory", _file("notes.txt")),
    Probe("hunt-cluster-kernel", [*HUNT, "--kernel", "nosuch:1"], "--kernel nosuch:1"),
    Probe("hunt-cluster-mode-extlog", [*HUNT, "--mode", "extlog"], "--mode extlog"),
    Probe("hunt-cluster-sample", [*HUNT, "--sample", "999999"], "--sample"),
    # kernels
    Probe("kernels-mirror", ["kernels"], "PLUGPULL_DEBIAN_MIRROR='ftp://m.invalid/debian'",
          env=(("PLUGPULL_DEBIAN_MIRROR", "ftp://m.invalid/debian"),)),
    Probe("kernels-mirror-kernel", ["crash", "--kernel", "debian:6.12"], "PLUGPULL_DEBIAN_MIRROR='m.invalid'",
          env=(("PLUGPULL_DEBIAN_MIRROR", "m.invalid"),)),
]


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> Path:
    """Two CAs with a member each, and a file of junk."""
    from tests.unit.cluster.test_cluster import tls_files
    where = tmp_path_factory.mktemp("tls")
    tls_files(where / "a")
    tls_files(where / "b")
    (where / "junk").write_text("junk\n")
    return where


@pytest.fixture
def sandbox(own_workdir, monkeypatch):
    """A working directory and a cache of the test's own; no scheduler contacted, no guest."""
    for module in (reach, serve, crash_coordinator, hunt_coordinator):  # each holds probe by its own name
        monkeypatch.setattr(module, "probe", _contacted)
    monkeypatch.setattr(serve, "run_worker", _contacted)
    for module in (cli.crash, rig_mod):
        monkeypatch.setattr(module, "prepare_rig", _contacted)
    return own_workdir


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.id)
def test_bad_input_is_refused_in_one_line(probe, sandbox, tls, capsys, monkeypatch):
    for name, value in probe.env:
        monkeypatch.setenv(name, value)
    if probe.setup:
        probe.setup(sandbox)
    before = files_under(sandbox)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        fill = {TMP: str(sandbox), TLS: str(tls), "{port}": port}
        argv = [_filled(a, fill) for a in probe.argv]
        code = exit_code(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert "Traceback" not in err and len(lines) == 1, err
    assert _filled(probe.names, fill) in lines[0], err
    assert files_under(sandbox) == before, "the probe created files"
    assert not (sandbox.parent / "cache").exists()


def _filled(text: str, fill: dict) -> str:
    for key, value in fill.items():
        text = text.replace(key, value)
    return text
