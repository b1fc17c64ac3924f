"""`--cluster` on this machine: a scheduler and two `plugpull worker` processes on loopback,
each with its own work dir. One recording is judged locally, then by the cluster, then by
the cluster again while one worker is SIGKILLed with its guest up: the same verdicts and
state digests each time, no state lost, and no process, guest or directory left behind. A
`matrix` cell run here and with `--cluster` on the same recording: the same summary, and the
same saved states, verdicts and digests."""

import json
import subprocess
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from plugpull.check.checker import Checker, Plug
from plugpull.cluster.crash_coordinator import ClusterJudge
from plugpull.cluster.spawn import spawned, stop
from plugpull.crash.judge import judge, remove_states
from plugpull.crash.record import Record, record
from plugpull.crash.crashrun import crash_jobs
from plugpull.crash.spec import CrashSpec
from plugpull.powerloss.writelog import iter_entries
from plugpull.results import read_cells

pytestmark = pytest.mark.vm

SPEC = CrashSpec(fs="ext4", mode="nobarrier", workload="fsync-files", params=(("count", 20),),
                 models=("reorder",), states=12, seed=1)


def processes_under(root: Path) -> list[str]:
    """Processes whose command line names `root`: the workers, and the guests they run."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(root).encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:
            continue
    return found


def guest_of(workdir: Path) -> bool:
    """Whether a QEMU of this worker is running (its temp dir is in the worker's)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes()
        except OSError:
            continue
        if b"qemu-system" in text and str(workdir / "tmp").encode() in text:
            return True
    return False


def in_task(workdir: Path) -> bool:
    """Whether the worker is inside a task: its states are built in a scratch dir of the task's."""
    return any(workdir.glob("states/*/state-*.img"))


def kill_when_busy(cluster, i: int, done: threading.Event, killed: threading.Event) -> None:
    """SIGKILL worker `i` while a task of its has its states and its guest is up (a guest it
    keeps between tasks is up before)."""
    while not done.is_set():
        if in_task(cluster.workdirs[i]) and guest_of(cluster.workdirs[i]):
            cluster.kill_worker(i)
            killed.set()
            return
        time.sleep(0.1)


def verdicts(judged) -> list[tuple[str, str]]:
    try:
        return [(str(j.verdict.verdict), j.state.digest()) for j in judged]
    finally:
        remove_states([j.state for j in judged])


def test_a_cluster_judges_as_this_machine_does_and_loses_no_state_to_a_killed_worker(rig, tmp_path):
    plan = SPEC.resolve()
    rec = record(tmp_path / "record", plan.recording_bed, plan.trigger, rig)
    entries = list(iter_entries(rec.log))
    jobs = crash_jobs(rec, entries, SPEC, plan.models)
    checker = Checker(rig, plan.fs, plug=Plug.HOT, workers=2)
    local = verdicts(judge(rec, jobs, checker, plan.workload, SPEC.seed, tmp_path / "states", entries))
    assert len(set(local)) > 1, local  # not all alike: a mix-up would show
    root = tmp_path / "cluster"
    with spawned(2, root, accel=str(rig.accel)) as cluster:
        judging = ClusterJudge(cluster.address)
        assert verdicts(judging(rec, jobs, checker, plan.workload, SPEC.seed, entries=entries)) == local
        assert 1 <= judging.wire["copies"] <= judging.wire["workers"], judging.wire  # once per worker at most
        done, killed = threading.Event(), threading.Event()
        watcher = threading.Thread(target=kill_when_busy, args=(cluster, 0, done, killed))
        watcher.start()
        try:
            again = verdicts(judging(rec, jobs, checker, plan.workload, SPEC.seed, entries=entries))
        finally:
            done.set()
            watcher.join()
        assert killed.is_set(), "worker 0 never ran a guest: nothing was killed mid-run"
        assert again == local
    assert not root.exists()
    assert processes_under(root) == []


def replaying_the_first_recording(monkeypatch, kept: Path) -> None:
    """Every recording after the first is a sparse copy of the first: two runs then judge the
    same record, and their verdicts and digests can be held equal."""
    import plugpull.crash.crashrun as crash_run
    real = crash_run.record

    def record_once(directory: Path, *args, **kwargs):
        if kept.exists():
            subprocess.run(["cp", "-a", "--sparse=always", str(kept), str(directory)], check=True)
            return Record.load(directory)
        rec = real(directory, *args, **kwargs)
        subprocess.run(["cp", "-a", "--sparse=always", str(directory), str(kept)], check=True)
        return rec

    monkeypatch.setattr(crash_run, "record", record_once)


def matrix_states(results: Path) -> tuple[dict, list]:
    """The cell's crash summary without its timing and paths, and each saved state's (name,
    verdict, digest)."""
    [cell] = read_cells(results)[0]
    assert cell.error is None, cell.error
    summary = {k: v for k, v in asdict(cell.crash).items() if k not in ("states_per_minute", "artifacts")}
    saved = {p.parent.name: json.loads(p.read_text()) for p in Path(cell.crash.artifacts).glob("states/*/state.json")}
    return summary, sorted((name, s["verdict"], s["digest"]) for name, s in saved.items())


def test_matrix_with_cluster_gives_the_cells_verdicts_and_digests_this_machine_gives(rig, tmp_path, monkeypatch):
    import plugpull.runs.matrix as runs_matrix
    from plugpull.cli import main

    monkeypatch.setattr(runs_matrix, "prepare_rig", lambda *a: rig)
    replaying_the_first_recording(monkeypatch, tmp_path / "kept")
    argv = ["matrix", "--fs", "ext4", "--mode", "nobarrier", "--workload", "fsync-files", "--param",
            "fsync-files.count=20", "--model", "reorder", "--states", "12", "--no-throughput", "--accel", str(rig.accel)]
    assert main([*argv, "--results", str(tmp_path / "local" / "r.jsonl")]) == 0
    local = matrix_states(tmp_path / "local" / "r.jsonl")
    assert local[1] and local[0]["distinct"] > 1, local  # states saved, and not all one: a mix-up would show
    root = tmp_path / "cluster"
    with spawned(2, root, accel=str(rig.accel)) as cluster:
        assert main([*argv, "--results", str(tmp_path / "remote" / "r.jsonl"), "--cluster", cluster.address]) == 0
        workdirs = cluster.workdirs
        assert all(len(list((w / "records").iterdir())) == 1 for w in workdirs)  # the workers checked them
        assert any(guest_of(w) for w in workdirs)  # a worker keeps its checker guest between tasks
        for proc in cluster.workers:
            stop(proc)  # SIGTERM: the worker closes, and its plugin its guest
        assert [proc.returncode for proc in cluster.workers] == [0, 0]
        assert not any(guest_of(w) for w in workdirs)
        assert [p.name for w in workdirs for p in (w / "tmp").iterdir()] == []  # no guest's temp dir left
    assert matrix_states(tmp_path / "remote" / "r.jsonl") == local
    assert not root.exists() and processes_under(root) == []
