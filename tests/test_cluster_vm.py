"""`--cluster` on this machine: a scheduler and two `plugpull worker` processes on loopback,
each with its own work dir. One recording is judged locally, then by the cluster, then by
the cluster again while one worker is SIGKILLed with its guest up: the same verdicts and
state digests each time, no state lost, and no process, guest or directory left behind."""

import threading
import time
from pathlib import Path

import pytest

from plugpull.check.checker import Checker, Plug
from plugpull.cluster.coordinator import ClusterJudge
from plugpull.cluster.spawn import spawned
from plugpull.crash.judge import judge, remove_states
from plugpull.crash.record import record
from plugpull.crash.run import crash_jobs
from plugpull.crash.spec import CrashSpec
from plugpull.powerloss.writelog import iter_entries

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


def kill_when_busy(cluster, i: int, done: threading.Event, killed: threading.Event) -> None:
    while not done.is_set():
        if guest_of(cluster.workdirs[i]):
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
        assert judging.wire["record"] <= 2 * (judging.wire["record"] // judging.wire["workers"])
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
