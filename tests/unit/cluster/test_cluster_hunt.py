"""`hunt --cluster` without guests: the coordinator's merge of chunk answers into the journal
(a line answered twice written once, failing artifacts unpacked in place, a line whose
artifacts are elsewhere refused), the packing of a failing directory, and a whole hunt on an
in-process Dask cluster whose chunks are judged by a fake: every workload once, resumed
without resubmitting what is judged, and stopped by a spent budget."""

import json
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from plugpull.cluster import hunt_task
from plugpull.cluster import worker as cluster_worker
from plugpull.cluster.bundle import CorruptRecord, pack_tree, unpack_tree
from plugpull.cluster.hunt_coordinator import ClusterHunt, Merge, chunks_to_go
from plugpull.cluster.hunt_task import ChunkResult
from plugpull.cluster.worker import image_resource
from plugpull.errors import InfraError
from plugpull.generate.space import Space
from plugpull.hunt.journal import JOURNAL, SETTINGS, Journal, read_lines
from plugpull.hunt.hunter import HuntRun, HuntSpec, Place, workload_ids

distributed = pytest.importorskip("distributed")

RELEASE = "6.1.0-x"
SPEC = HuntSpec(1, sample=6, chunk=2)
IDS = workload_ids(Space(1), 6, 1)


def judged(ident: str, failing: bool = False, kernel: str = RELEASE, artifact: str | None = None) -> dict:
    return {"id": ident, "kernel": kernel, "ops": "creat A/foo", "states": 2, "distinct": 2,
            "verdicts": {"data-loss" if failing else "clean": 2}, "rules": {"fsync-data": 1} if failing else {},
            "failing": failing, "reason": "", "artifact": artifact, "seconds": 1.0}


def failing_dir(root: Path, ident: str) -> bytes:
    """A failing workload's directory as a worker packs it: a record with a sparse image."""
    where = root / "failing" / ident
    (where / "record-ab").mkdir(parents=True)
    (where / "program.sh").write_text(f"# {ident}\n")
    with open(where / "record-ab" / "base.img", "wb") as f:
        f.truncate(8 << 20)
        f.seek(4 << 20)
        f.write(b"data")
    return pack_tree(where)


def merged(tmp_path: Path, several: bool = False):
    out = tmp_path / "h"
    journal = Journal(out, SPEC.settings(RELEASE))
    run = HuntRun(journal.settings, 6, [])
    return out, journal, run, Merge(out, journal, run, several)


def test_a_line_answered_twice_is_journaled_once_and_its_artifacts_are_unpacked(tmp_path):
    out, journal, run, merge = merged(tmp_path)
    blob = failing_dir(tmp_path / "worker", IDS[0])
    answer = ChunkResult([judged(IDS[0], True, artifact=f"failing/{IDS[0]}"), judged(IDS[1])],
                         {f"failing/{IDS[0]}": blob}, states=4, distinct=4)
    assert merge(answer) == 2
    assert merge(answer) == 0  # the same chunk, run again after its worker was lost
    assert merge(ChunkResult([judged(IDS[1]), judged(IDS[2])])) == 1
    merge.close()
    lines = read_lines(out / JOURNAL)
    assert [line["id"] for line in lines] == IDS[:3]
    assert run.new == 3 and run.states == 4
    kept = out / "failing" / IDS[0]
    assert (kept / "program.sh").read_text() == f"# {IDS[0]}\n"
    base = kept / "record-ab" / "base.img"
    assert base.stat().st_size == 8 << 20 and base.read_bytes()[4 << 20:(4 << 20) + 4] == b"data"
    assert base.stat().st_blocks * 512 < 1 << 20, "the image's holes were filled"
    assert not any(out.glob(".work-*"))  # the scratch the artifacts were unpacked in


def test_an_infra_line_is_journaled_and_a_later_judgement_of_its_workload_too(tmp_path):
    out, journal, run, merge = merged(tmp_path)
    assert merge(ChunkResult([{"id": IDS[0], "kernel": RELEASE, "ops": "x", "infra": "harness: QEMU died"}])) == 1
    assert run.infra == [(IDS[0], "harness: QEMU died")] and (IDS[0], RELEASE) not in journal.done
    assert merge(ChunkResult([judged(IDS[0])])) == 1
    assert (IDS[0], RELEASE) in journal.done


def test_a_stale_failing_dir_is_replaced_and_artifacts_placed_elsewhere_are_refused(tmp_path):
    out, journal, run, merge = merged(tmp_path)
    stale = out / "failing" / IDS[0]
    stale.mkdir(parents=True)
    (stale / "old.txt").write_text("from a run stopped before its line was written")
    blob = failing_dir(tmp_path / "worker", IDS[0])
    merge(ChunkResult([judged(IDS[0], True, artifact=f"failing/{IDS[0]}")], {f"failing/{IDS[0]}": blob}))
    assert sorted(p.name for p in stale.iterdir()) == ["program.sh", "record-ab"]
    with pytest.raises(InfraError, match="not one of its chunk's"):  # an artifact outside the hunt: no whole line
        merge(ChunkResult([judged(IDS[1], True, artifact="failing/../../elsewhere")],
                          {"failing/../../elsewhere": blob}))
    with pytest.raises(InfraError, match="not where its line says"):
        merge(ChunkResult([judged(IDS[2], True, artifact=f"failing/{IDS[2]}")]))  # no bytes for it
    assert not (tmp_path / "elsewhere").exists() and (IDS[1], RELEASE) not in journal.done


def test_a_line_of_another_chunk_or_not_whole_is_refused(tmp_path):
    from plugpull.cluster.hunt_coordinator import Chunk
    out, journal, run, merge = merged(tmp_path)
    chunk = Chunk(RELEASE, "img", tuple(IDS[:2]))
    with pytest.raises(InfraError, match="not one of its chunk's"):
        merge(ChunkResult([judged(IDS[0]), judged(IDS[3])]), chunk)
    with pytest.raises(InfraError, match="not one of its chunk's"):
        merge(ChunkResult([judged(IDS[0], kernel="7.3")]), chunk)
    with pytest.raises(InfraError, match="not one of its chunk's"):
        merge(ChunkResult([{"id": IDS[0], "kernel": RELEASE, "states": "2"}]), chunk)
    assert not (out / JOURNAL).exists()
    assert merge(ChunkResult([judged(IDS[0]), judged(IDS[1])]), chunk) == 2


def test_with_several_kernels_the_artifacts_go_under_the_release(tmp_path):
    out, journal, run, merge = merged(tmp_path, several=True)
    blob = failing_dir(tmp_path / "worker", IDS[0])
    merge(ChunkResult([judged(IDS[0], True, artifact=f"failing/{IDS[0]}/{RELEASE}")],
                      {f"failing/{IDS[0]}/{RELEASE}": blob}))
    assert (out / "failing" / IDS[0] / RELEASE / "program.sh").is_file()


def test_an_artifact_blob_never_writes_outside_its_directory(tmp_path):
    where = tmp_path / "a"
    (where / "sub").mkdir(parents=True)
    (where / "sub" / "f").write_text("x")
    blob = pack_tree(where)
    unpack_tree(blob, tmp_path / "b")
    assert (tmp_path / "b" / "sub" / "f").read_text() == "x"
    evil = blob.replace(b'"sub/f"', b'"../ff"')
    with pytest.raises(CorruptRecord, match="not a path inside"):
        unpack_tree(evil, tmp_path / "c")
    assert not (tmp_path / "ff").exists()
    with pytest.raises(CorruptRecord):
        unpack_tree(b"plugpull-record-1\n" + blob[len(b"plugpull-tree-1\n"):], tmp_path / "d")


def rig(release: str = RELEASE, key: str = "img", backend: str = "qemu"):
    return SimpleNamespace(image=SimpleNamespace(kernel_release=release, key=key), backend=SimpleNamespace(name=backend))


def test_the_chunks_to_go_leave_out_what_the_journal_holds_per_kernel(tmp_path):
    journal = Journal(tmp_path / "h", SPEC.settings("a", "b"))
    journal.append([judged(IDS[0], kernel="a"), judged(IDS[1], kernel="a"), judged(IDS[0], kernel="b")])
    chunks = chunks_to_go([rig("a", "ka"), rig("b", "kb")], IDS, journal, 3)
    assert [(c.kernel, c.image_key, c.ids) for c in chunks] == [
        ("a", "ka", tuple(IDS[2:5])), ("a", "ka", tuple(IDS[5:])), ("b", "kb", tuple(IDS[1:4])),
        ("b", "kb", tuple(IDS[4:]))]


class FakeChunks:
    """Stands in for the worker's guests and `judge_chunks`: every third workload fails, with
    a directory of its own; notes every workload judged."""

    def __init__(self):
        self.judged: list[str] = []
        self.lock = threading.Lock()

    def guests(self, *args, **kwargs):
        return SimpleNamespace(close=lambda: None)

    def judge_chunks(self, chunks, spec, guests, work, place, run, keep, started=None):
        lines = []
        for ident in chunks[0]:
            bad = IDS.index(ident) % 3 == 0
            if bad:
                place.failing(ident).mkdir(parents=True)
                (place.failing(ident) / "program.sh").write_text(ident)
            artifact = str(place.failing(ident).relative_to(place.out)) if bad else None
            lines.append(judged(ident, bad, place.kernel, artifact))
            run.states += 2
        with self.lock:
            self.judged += list(chunks[0])
        keep(lines)


@pytest.fixture
def cluster(tmp_path, monkeypatch, request):
    """An in-process scheduler with two workers that hold plugpull's plugin (their backend
    `request.param`, QEMU unless given); chunks judged by FakeChunks."""
    fake = FakeChunks()
    monkeypatch.setattr(hunt_task, "HuntGuests", fake.guests)
    monkeypatch.setattr(hunt_task, "judge_chunks", fake.judge_chunks)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                  resources={image_resource("img"): 1}) as local, \
            distributed.Client(local) as client:
        backend = getattr(request, "param", "qemu")
        client.register_plugin(cluster_worker.PlugpullPlugin(tmp_path / "w", rig(backend=backend)))
        yield SimpleNamespace(address=local.scheduler_address, fake=fake)


def test_a_hunt_on_a_cluster_judges_each_workload_once_and_resumes_where_it_was(tmp_path, cluster):
    out = tmp_path / "h"
    run = ClusterHunt(cluster.address)(SPEC, Space(1), [rig()], out)
    assert sorted(cluster.fake.judged) == sorted(IDS) and run.new == 6 and run.states == 12
    lines = read_lines(out / JOURNAL)
    assert sorted(line["id"] for line in lines) == sorted(IDS)
    assert json.loads((out / SETTINGS).read_text()) == SPEC.settings(RELEASE)
    assert [line["id"] for line in run.lines] == IDS
    for line in lines:
        assert (out / line["artifact"] / "program.sh").read_text() == line["id"] if line["failing"] else \
            line["artifact"] is None
    assert not any(out.glob(".work-*")) and not any((tmp_path / "w" / "hunts").glob(f"{os.getpid()}/chunk-*"))
    again = ClusterHunt(cluster.address)(SPEC, Space(1), [rig()], out)  # resumed: nothing left to send
    assert len(cluster.fake.judged) == 6 and again.new == 0 and len(again.lines) == 6


def test_a_spent_budget_sends_no_chunk(tmp_path, cluster):
    from dataclasses import replace
    run = ClusterHunt(cluster.address)(replace(SPEC, budget_s=1e-12), Space(1), [rig()], tmp_path / "h")
    assert run.stopped_by_budget and run.new == 0 and cluster.fake.judged == []


@pytest.mark.parametrize("cluster", ["libvirt"], indirect=True)
def test_a_worker_on_libvirt_refuses_to_record_a_chunk(tmp_path, cluster):
    with pytest.raises(InfraError, match="a hunt records on QEMU"):
        ClusterHunt(cluster.address, retries=0)(SPEC, Space(1), [rig()], tmp_path / "h")
    assert cluster.fake.judged == [] and not (tmp_path / "h" / JOURNAL).exists()


def test_a_kernel_no_worker_has_is_said_in_one_line(tmp_path, cluster):
    with pytest.raises(InfraError, match="no worker of the cluster .* has the guest image of kernel 7.3"):
        ClusterHunt(cluster.address)(SPEC, Space(1), [rig("7.3", "other")], tmp_path / "h")


def test_a_scheduler_out_of_reach_stops_the_hunt_before_anything_is_made(tmp_path, monkeypatch, capsys):
    from plugpull import cli
    from plugpull.cluster import hunt_coordinator
    from plugpull.cluster.reach import SchedulerUnreachable
    from plugpull.guest import rig as rig_mod

    def unreachable(address, *args):
        raise SchedulerUnreachable(f"--cluster {address}: no Dask scheduler reached within 10 s: Connection refused")

    def no_guest(*args, **kwargs):
        raise AssertionError("a guest image was prepared for a hunt that cannot reach its cluster")

    monkeypatch.setattr(hunt_coordinator, "probe", unreachable)
    monkeypatch.setattr(rig_mod, "prepare_rig", no_guest)
    out = tmp_path / "h"
    assert cli.main(["hunt", "--seq", "1", "--out", str(out), "--cluster", "tcp://127.0.0.1:9"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reach the cluster's scheduler" in err[0] and "Connection refused" in err[0]
    assert not out.exists()


def test_the_only_worker_lost_mid_chunk_is_named_and_what_was_judged_is_kept(tmp_path, monkeypatch):
    from plugpull.cluster import hunt_coordinator
    from plugpull.cluster.lost import WorkerLost
    fake, started = FakeChunks(), threading.Event()
    judge = fake.judge_chunks

    def slow_second_chunk(chunks, spec, *args):
        if chunks[0][0] != IDS[0]:
            for _ in range(100):  # the first chunk's answer in the journal (else it goes with the worker)
                if len(read_lines(tmp_path / "h" / JOURNAL)) == 2:
                    break
                time.sleep(0.1)
            started.set()
            threading.Event().wait(3)  # long enough to lose the worker meanwhile
        judge(chunks, spec, *args)

    monkeypatch.setattr(hunt_task, "HuntGuests", fake.guests)
    monkeypatch.setattr(hunt_task, "judge_chunks", slow_second_chunk)
    monkeypatch.setattr(hunt_coordinator, "POLL", 0.5)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                  resources={image_resource("img"): 1}) as local, \
            distributed.Client(local) as client:
        client.register_plugin(cluster_worker.PlugpullPlugin(tmp_path / "w", rig()))
        (address,) = client.scheduler_info()["workers"]

        def lose_the_worker():
            started.wait(30)
            local.sync(local.workers[0].close, reason="killed by the test")

        loser = threading.Thread(target=lose_the_worker)
        loser.start()
        try:
            with pytest.raises(WorkerLost) as lost:
                ClusterHunt(local.scheduler_address, retries=0)(SPEC, Space(1), [rig()], tmp_path / "h")
        finally:
            loser.join()
    said = str(lost.value)
    assert f"lost worker {address} in the middle of the hunt" in said and "0 worker(s) left" in said
    assert "run the hunt again to go on" in said and "verdict" not in said and "\n" not in said
    assert [line["id"] for line in read_lines(tmp_path / "h" / JOURNAL)] == IDS[:2]  # the first chunk's
