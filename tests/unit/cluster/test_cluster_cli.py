"""`--cluster` on crash, matrix and reproduce without a VM: the same refusals on each (one
line, exit 2, nothing made), an unreachable scheduler failing before anything runs (exit 3),
and the cluster's judge reaching `run_crash` through the matrix runner in place of the case's
[hosts]."""

import socket

import pytest

from tests.cli_run import exit_code
from tests.case_files import write_case
from plugpull import cli
from plugpull.errors import NothingChecked
from plugpull.runs import caserun, matrix as runs_matrix

LOOPBACK = "tcp://127.0.0.1:8786"
CASE = """
title = "t"
[matrix]
fs = ["ext4"]
modes = ["nobarrier"]
workloads = ["fsync-files"]
[workload.fsync-files]
count = 4
"""
HOSTS = '[hosts]\nuris = ["qemu+ssh://rack9/system"]\n'


@pytest.fixture
def workdir(own_workdir, monkeypatch):
    """A working directory of the test's own with a case file beside it, and no guest boots."""
    write_case(own_workdir.parent, CASE)
    for module in (runs_matrix, caserun, cli.crash):
        monkeypatch.setattr(module, "prepare_rig", _no_rig)
    return own_workdir


def _no_rig(*args):
    raise AssertionError("a guest was to be prepared")


COMMANDS = {"crash": ["crash"], "matrix": ["matrix"], "reproduce": ["reproduce", "../case.toml"]}
REFUSED = [
    (["--cluster", "tcp://192.0.2.1:8786"], "needs TLS"),
    (["--cluster", LOOPBACK, "--hosts", "qemu:///system"], "choose one"),
    (["--cluster", LOOPBACK, "--backend", "libvirt"], "not with --backend libvirt"),
    (["--tls-ca-file", "ca.pem"], "go with --cluster"),
    (["--cluster", LOOPBACK, "--tls-ca-file", "ca.pem"], "together"),
]


@pytest.mark.parametrize("extra, said", REFUSED, ids=[r[1] for r in REFUSED])
@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_refuses_what_crash_refuses_with_cluster_in_one_line(command, extra, said, workdir, capsys):
    assert exit_code([*COMMANDS[command], *extra]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("argv, said", [(["crash", "--workers", "2"], "each worker runs one"),
                                        (["matrix", "--no-crash"], "--no-crash drops them"),
                                        (["reproduce", "../case.toml", "--no-crash"], "--no-crash drops them")])
def test_what_the_cluster_would_leave_idle_is_refused(argv, said, workdir, capsys):
    assert exit_code([*argv, "--cluster", LOOPBACK]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("command", ["matrix", "reproduce"])
def test_an_unreachable_scheduler_fails_before_any_result_or_log_is_made(command, workdir, capsys, monkeypatch):
    from plugpull.cluster import crash_coordinator
    monkeypatch.setattr(crash_coordinator, "REACH_TIMEOUT", 1.0)
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert exit_code([*COMMANDS[command], "--cluster", f"tcp://127.0.0.1:{port}"]) == 3
    assert "cannot reach the cluster's scheduler" in capsys.readouterr().err
    assert list(workdir.iterdir()) == []


@pytest.fixture
def judged(workdir, monkeypatch):
    """Each `run_crash` the matrix runner makes, with the judging it was given; the scheduler
    is taken as reached, and a rig stands in (no guest)."""
    from types import SimpleNamespace

    import plugpull.runs.matrix as runs_matrix
    from plugpull.cluster.crash_coordinator import ClusterJudge
    from plugpull.results import Env

    calls = []

    def run_crash(spec, rig, artifacts, judging=None):
        calls.append((spec, judging))
        raise NothingChecked("stood in for")

    monkeypatch.setattr(ClusterJudge, "reach", lambda self: None)
    monkeypatch.setattr(runs_matrix, "prepare_rig", lambda *a: SimpleNamespace())
    monkeypatch.setattr(runs_matrix, "environment", lambda *a: Env())
    monkeypatch.setattr(runs_matrix, "run_crash", run_crash)
    monkeypatch.setattr(runs_matrix, "measure_throughput", lambda *a: None)
    for module in (cli.matrix, cli.reproduce):
        monkeypatch.setattr(module, "finish_matrix", lambda *a, **kw: None)
    return calls


def test_matrix_hands_the_clusters_judge_to_every_cells_run_crash(judged, workdir):
    from plugpull.cluster.crash_coordinator import ClusterJudge
    argv = ["matrix", "--fs", "ext4", "--mode", "barrier,nobarrier", "--workload", "fsync-files", "--no-throughput",
            "--results", "r.jsonl"]
    assert exit_code([*argv, "--cluster", LOOPBACK]) == 3  # every cell 'checked nothing'
    assert [spec.mode for spec, _ in judged] == ["barrier", "nobarrier"]
    assert all(isinstance(j, ClusterJudge) and j.address == LOOPBACK for _, j in judged)
    judged.clear()
    (workdir / "r.jsonl").unlink()
    assert exit_code(argv) == 3
    from plugpull.crash.judge import judge
    assert [j for _, j in judged] == [judge, judge]  # without --cluster: this machine's checker guests


def test_reproduce_checks_on_the_cluster_instead_of_the_cases_hosts(judged, workdir, monkeypatch):
    def no_hosts(*args):
        raise AssertionError("the case's [hosts] were connected")

    monkeypatch.setattr(cli.reproduce, "checker_hosts", no_hosts)
    case = workdir.parent / "hosts.toml"
    case.write_text(CASE + HOSTS)
    assert exit_code(["reproduce", str(case), "--cluster", LOOPBACK, "--results", "r.jsonl"]) == 3
    [(spec, judging)] = judged
    assert (spec.fs, spec.mode, judging.address) == ("ext4", "nobarrier", LOOPBACK)
