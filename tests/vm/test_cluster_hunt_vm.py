"""`hunt --cluster` on this machine: a scheduler and two `plugpull worker` processes on loopback,
each with its own work dir, hunt a seq-1 sample of 24 on ext4 without barriers while one
worker is SIGKILLed in the middle of a chunk. The hunt completes: 24 judged lines, no workload
judged twice, the same failing workloads and rules as a local hunt of the same sample (as far
as two recordings agree: `assert_agree`), each failing workload's artifacts in its
`failing/ID/`, a state of them replayed here to the worker's digest and verdict, and no
process or directory left behind."""

import json
import threading
import time
from pathlib import Path

import pytest

from plugpull import cli
from plugpull.cluster.spawn import spawned
from plugpull.hunt.journal import JOURNAL
from tests.vm.test_cluster_vm import guest_of, processes_under

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.timeout(3600)]  # two 24-workload hunts under TCG

HUNT = ["hunt", "--seq", "1", "--sample", "24", "--fs", "ext4", "--mode", "nobarrier", "--chunk", "4"]


def journal(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()]


def in_chunk(workdir: Path) -> bool:
    """Whether the worker records a chunk: its workloads' recordings are in its chunk dir."""
    return any(workdir.glob("hunts/*/chunk-*/work/*/write.log"))


def kill_mid_chunk(cluster, i: int, done: threading.Event, killed: threading.Event) -> None:
    while not done.is_set():
        if in_chunk(cluster.workdirs[i]) and guest_of(cluster.workdirs[i]):
            time.sleep(2)  # well inside the chunk: a workload or more recorded
            cluster.kill_worker(i)
            killed.set()
            return
        time.sleep(0.1)


def assert_agree(lines: list[dict], local: list[dict]) -> None:
    """The same failing workloads and the same rules as the local hunt, as far as two
    recordings of a workload can agree. Without barriers, whether the guest's writes after a
    workload's last ack land in the log before the workload ends is timing, and with them the
    log's end is a cut of its own (6 states instead of 3); which metadata writes a cut holds is
    timing too. So per workload the oracle's rules (what its persistence points promise) are
    the same in both hunts, and fsck damage may differ: seen only in the recording with more
    states, never the other way."""
    here, there = {line["id"]: line for line in lines}, {line["id"]: line for line in local}
    assert {i for i, line in here.items() if line["failing"]} == {i for i, line in there.items() if line["failing"]}
    assert set().union(*(line["rules"] for line in lines)) == set().union(*(line["rules"] for line in local))
    for ident, line in here.items():
        assert set(line["rules"]) - {"fsck"} == set(there[ident]["rules"]) - {"fsck"}, (line, there[ident])
        fewer, more = sorted((line, there[ident]), key=lambda one: one["states"])
        if fewer["states"] < more["states"]:
            assert set(fewer["rules"]) <= set(more["rules"]), (line, there[ident])


def test_a_hunt_on_two_workers_judges_as_a_local_hunt_and_survives_a_killed_worker(rig, tmp_path, capsys):
    accel = ["--accel", str(rig.accel)]
    local = tmp_path / "local"
    t0 = time.monotonic()
    assert cli.main([*HUNT, *accel, "--out", str(local)]) == 0
    print(f"local hunt: {time.monotonic() - t0:.0f} s")
    root, out = tmp_path / "cluster", tmp_path / "on-cluster"
    with spawned(2, root, accel=str(rig.accel)) as cluster:
        done, killed = threading.Event(), threading.Event()
        watcher = threading.Thread(target=kill_mid_chunk, args=(cluster, 0, done, killed))
        watcher.start()
        t0 = time.monotonic()
        try:
            code = cli.main([*HUNT, *accel, "--out", str(out), "--cluster", cluster.address])
        finally:
            done.set()
            watcher.join()
        print(f"cluster hunt: {time.monotonic() - t0:.0f} s")
        assert killed.is_set(), "worker 0 never recorded a chunk: nothing was killed mid-chunk"
        assert code == 0, capsys.readouterr()
    lines = journal(out)
    assert len(lines) == 24 and len({line["id"] for line in lines}) == 24, "a workload judged twice, or not at all"
    assert not any(line.get("infra") for line in lines)
    assert_agree(lines, journal(local))
    failing = [line for line in lines if line["failing"]]
    assert failing, "nobarrier found nothing: the comparison shows little"
    for line in failing:
        assert (out / line["artifact"] / "program.sh").is_file()
        kept = out / line["artifact"]
        assert any(kept.glob("record-*/record.json")) or (kept / "kernel.txt").is_file(), line["artifact"]
    state = next(p.parent for p in sorted((out / failing[0]["artifact"]).glob("states/*/state.json")))
    assert cli.main(["replay", str(state), *accel]) == 0  # here, the worker's state and verdict again
    assert not any(out.glob(".work-*"))
    assert not root.exists() and processes_under(root) == []
