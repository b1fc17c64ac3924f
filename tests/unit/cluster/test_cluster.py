"""`--cluster` without a VM: the record bundle (its digest checked, a damaged one refused),
the states' names, answers landing at their indexes, the bind rules, and a whole round trip
on an in-process Dask cluster whose workers' checker is a fake."""

import json
import os
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from plugpull.check.verdict import Observation
from plugpull.cli import main
from plugpull.cluster import worker as cluster_worker
from plugpull.cluster.bundle import CorruptRecord, install, pack, verify
from plugpull.cluster.crash_task import in_order, state_names, task_batches
from plugpull.cluster.serve import check_bind, check_reach, host_of, is_loopback, security
from plugpull.crash.judge import StateJob, build_state, plan_states
from plugpull.crash.record import Record
from plugpull.errors import InfraError, UsageError
from plugpull.powerloss.writelog import LogWriter, iter_entries

MIB = 1 << 20


def make_record(where: Path, writes: int = 12) -> Record:
    """A one-disk record: an 8 MiB sparse base with a little data, a log of `writes` writes
    with a flush every third."""
    where.mkdir(parents=True)
    (where / "record.json").write_text(json.dumps({"disks": 1, "acks": []}))
    with open(where / "base.img", "wb") as f:
        f.truncate(8 * MIB)
        os.pwrite(f.fileno(), b"base" * 1024, 3 * MIB)
    rng = random.Random(7)
    with LogWriter(where / "write.log") as log:
        for i in range(writes):
            log.write(rng.randrange(0, 16000, 8), bytes([i + 1]) * 4096)
            if i % 3 == 2:
                log.flush()
    return Record.load(where)


def test_a_bundle_unpacks_to_the_same_files_holes_and_all(tmp_path):
    rec = make_record(tmp_path / "rec")
    bundle = pack(rec)
    assert len(bundle.data) < MIB  # the 8 MiB base is mostly hole: it is not sent
    got = install(tmp_path / "cache", bundle.digest, bundle.data)
    assert got == tmp_path / "cache" / "records" / bundle.digest
    for name in ("record.json", "base.img", "write.log"):
        assert (got / name).read_bytes() == (rec.dir / name).read_bytes()
    assert os.stat(got / "base.img").st_blocks * 512 < MIB
    assert pack(rec).digest == bundle.digest  # content-addressed: the same record, the same name


@pytest.mark.parametrize("damage", ["flip", "cut", "other"])
def test_a_damaged_or_misnamed_bundle_is_refused_and_nothing_installed(tmp_path, damage):
    rec = make_record(tmp_path / "rec")
    bundle = pack(rec)
    data = bytearray(bundle.data)
    if damage == "flip":
        data[len(data) // 2] ^= 0x40
    elif damage == "cut":
        data = data[:-10]
    digest = pack(make_record(tmp_path / "other", writes=5)).digest if damage == "other" else bundle.digest
    with pytest.raises(CorruptRecord, match="refused"):
        install(tmp_path / "cache", digest, bytes(data))
    assert not (tmp_path / "cache" / "records" / digest).exists()
    verify(bundle.digest, bundle.data)  # the intact one passes


def test_workers_sharing_a_cache_install_a_record_at_once_and_all_find_it(tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    rec = make_record(tmp_path / "rec")
    bundle = pack(rec)
    for attempt in range(5):
        cache = tmp_path / f"cache{attempt}"
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda _: install(cache, bundle.digest, bundle.data), range(8)))
        assert set(got) == {cache / "records" / bundle.digest}
        assert (got[0] / "write.log").read_bytes() == rec.log.read_bytes()
        assert [p.name for p in (cache / "records").iterdir()] == [bundle.digest]  # no half-unpacked copy left


def planned_of(rec: Record, seed: int = 3):
    jobs = [StateJob("prefix", c) for c in (0, 4, 4, 9, 15)] + [StateJob("reorder", c) for c in (7, 15, 16)]
    return jobs, plan_states(rec, jobs, seed)


def test_states_are_named_once_each_by_record_model_cuts_and_seed(tmp_path):
    rec = make_record(tmp_path / "rec")
    jobs, planned = planned_of(rec)
    names = state_names("d" * 64, jobs, planned, 3, ["tar"] * len(planned.plans))
    assert [n.index for n in names] == list(range(len(planned.plans)))
    assert len(names) < len(jobs)  # prefix 4 twice, and equal plans, make one state each
    for name in names:
        assert (name.record, name.seed) == ("d" * 64, 3)
        assert planned.which[jobs.index(name.job)] == name.index  # the first job that builds it
    wrong = names[1].__class__(**{**names[1].__dict__, "key": "0" * 64})
    with pytest.raises(InfraError, match="other pieces"):
        cluster_worker._pieces([list(iter_entries(rec.log))], wrong)
    cluster_worker._pieces([list(iter_entries(rec.log))], names[1])  # its own key passes


def test_answers_land_at_their_indexes_and_a_lost_or_doubled_one_is_an_error():
    batches = task_batches(list(range(10)), 4, 2)
    assert [len(b) for b in batches] == [4, 4, 2] and sum(batches, []) == list(range(10))
    assert [len(b) for b in task_batches(list(range(63)), 8, 2)] == [16, 16, 16, 15]  # few guest starts
    assert [len(b) for b in task_batches(list(range(5)), 8, 2)] == [3, 2]  # every thread gets one
    answers = [[(i, f"obs{i}") for i in b] for b in reversed(batches)]
    assert in_order(10, answers) == [f"obs{i}" for i in range(10)]
    with pytest.raises(ValueError, match="never answered"):
        in_order(10, answers[1:])
    with pytest.raises(ValueError, match="twice"):
        in_order(10, answers + answers[:1])


def test_only_loopback_binds_without_tls(tmp_path):
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and not is_loopback("192.0.2.1")
    check_bind("127.0.0.1", None)
    with pytest.raises(UsageError, match="needs TLS"):
        check_bind("192.0.2.1", None)
    check_bind("192.0.2.1", object())  # with TLS it may
    with pytest.raises(UsageError, match="together"):
        security(tmp_path / "ca.pem", None, None)
    assert security(None, None, None) is None
    assert host_of("tls://[::1]:8786") == "::1" and host_of("tcp://127.0.0.1:1") == "127.0.0.1"
    check_reach("tcp://127.0.0.1:8786", None, "--cluster")
    with pytest.raises(UsageError, match="--cluster tcp://192.0.2.1:1 is not on loopback"):
        check_reach("tcp://192.0.2.1:1", None, "--cluster")


@pytest.mark.parametrize("argv", [["scheduler", "--host", "192.0.2.1", "--port", "0"],
                                  ["worker", "--scheduler", "tcp://192.0.2.1:8786"],
                                  ["crash", "--cluster", "tcp://192.0.2.1:8786"]])
def test_an_open_address_without_tls_is_refused_in_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "needs TLS" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra, said", [(["--hosts", "qemu:///system"], "choose one"),
                                         (["--workers", "2"], "each worker runs one")])
def test_cluster_refuses_the_local_checkers_spreading_options(extra, said, capsys):
    assert main(["crash", "--cluster", "tcp://127.0.0.1:8786", *extra]) == 2
    assert said in capsys.readouterr().err


def test_an_unreachable_scheduler_fails_before_anything_is_recorded(capsys, monkeypatch):
    from plugpull.cluster import crash_coordinator
    monkeypatch.setattr(crash_coordinator, "REACH_TIMEOUT", 1.0)
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["crash", "--cluster", f"tcp://127.0.0.1:{port}", "--out", "/nonexistent/never-made"]) == 3
    assert "cannot reach the cluster's scheduler" in capsys.readouterr().err


class FakeChecker:
    """Stands in for the worker's Checker: each state's mount_rc is its number; it takes a
    little while, in a random order across workers."""

    def __init__(self, rig, workers, **settings):
        self.settings = settings

    def check(self, states, collect=None):
        time.sleep(random.random() / 20)
        return [Observation(int(s.images[0].stem.split("-")[1]), 0) for s in states]


def tls_files(where: Path) -> tuple[Path, Path, Path]:
    """A CA and one member certificate for 127.0.0.1 (openssl), as docs/cluster.md makes them."""
    if not shutil.which("openssl"):
        pytest.skip("no openssl here")
    where.mkdir()
    ca, key, cert = where / "ca.pem", where / "member.key", where / "member.pem"
    (where / "san").write_text("subjectAltName=IP:127.0.0.1\n")
    for argv in (["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=ca",
                  "-keyout", where / "ca.key", "-out", ca],
                 ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=member", "-keyout", key, "-out", where / "csr"],
                 ["x509", "-req", "-in", where / "csr", "-CA", ca, "-CAkey", where / "ca.key", "-CAcreateserial",
                  "-days", "1", "-out", cert, "-extfile", where / "san"]):
        subprocess.run(["openssl", *map(str, argv)], check=True, capture_output=True)
    return ca, cert, key


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_a_cluster_round_trip_gives_each_state_its_observation_and_digest(tmp_path, monkeypatch, tls):
    distributed = pytest.importorskip("distributed")
    from plugpull.cluster.crash_coordinator import ClusterJudge
    sec = security(*tls_files(tmp_path / "tls")) if tls else None
    rec = make_record(tmp_path / "rec")
    jobs, planned = planned_of(rec)
    (tmp_path / "local").mkdir()
    local = [build_state(rec, pieces, tmp_path / "local" / f"s{i}.img").digest() for i, pieces in enumerate(planned.plans)]
    monkeypatch.setattr(cluster_worker, "Checker", FakeChecker)
    rig = SimpleNamespace(image=SimpleNamespace(key="img"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=False, protocol="tls" if tls else "tcp",
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0", security=sec) as cluster, \
            distributed.Client(cluster, security=sec) as client:
        client.register_plugin(cluster_worker.PlugpullPlugin(tmp_path / "w", rig))
        bundle = pack(rec)
        names = state_names(bundle.digest, jobs, planned, 3, ["tar"] * len(planned.plans))
        judge = ClusterJudge(cluster.scheduler_address, security=sec)
        assert cluster.scheduler_address.startswith("tls://" if tls else "tcp://127.0.0.1:")
        answers = judge.check(bundle, names, {}, "img", per_task=2)
        assert [obs.mount_rc for obs, _ in answers] == list(range(len(names)))
        assert [digest for _, digest in answers] == local
        assert judge.wire["record"] <= 2 * len(bundle.data)  # once per worker, not once per state
        with pytest.raises(InfraError, match="not the coordinator"):
            judge.check(bundle, names, {}, "another image", per_task=2)
    assert not any((tmp_path / "w" / "states").iterdir())
