"""A `plugpull worker --backend libvirt`: one recording is judged on this machine's QEMU,
then by a cluster whose one worker checks on the local libvirtd. The same verdicts and
state digests (its fsck runs in the guest, and its guests boot, none is restored); its
checker guest is a libvirt domain kept from one run to the next; stopped, the worker leaves
no domain, process or directory behind."""

import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from tests.vm.test_cluster_vm import SPEC, processes_under, verdicts

from plugpull.check.checker import Checker, Plug
from plugpull.cluster.crash_coordinator import ClusterJudge
from plugpull.cluster.spawn import spawned, stop
from plugpull.crash.judge import judge
from plugpull.crash.record import record
from plugpull.crash.crashrun import crash_jobs
from plugpull.powerloss.writelog import iter_entries

pytestmark = pytest.mark.vm


def domains_of(uri: str, root: Path) -> list[str]:
    """The domains, running or defined, whose files lie under `root` (a worker's temp dir):
    this test's, not those of anyone else on the same libvirtd."""
    import libvirt
    conn = libvirt.open(uri)
    try:
        return [d.name() for d in conn.listAllDomains() if str(root) in d.XMLDesc()]
    finally:
        conn.close()


@pytest.fixture
def reachable_root():
    """A directory libvirt's QEMU user can reach (pytest's own temp dirs are root's alone):
    the worker's temp dir, where its domains' files are staged, lies under it."""
    root = Path(tempfile.mkdtemp(prefix="pp-libvirt-worker-"))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_worker_on_libvirt_judges_as_this_machine_does_and_leaves_nothing(rig, libvirt_backend, tmp_path,
                                                                           reachable_root):
    spec = replace(SPEC, states=8)
    plan = spec.resolve()
    rec = record(tmp_path / "record", plan.recording_bed, plan.trigger, rig)
    entries = list(iter_entries(rec.log))
    jobs = crash_jobs(rec, entries, spec, plan.models)
    checker = Checker(rig, plan.fs, plug=Plug.HOT, workers=1)
    local = verdicts(judge(rec, jobs, checker, plan.workload, spec.seed, tmp_path / "states", entries))
    assert len(local) > 1
    root, uri = reachable_root / "cluster", libvirt_backend.uri
    with spawned(1, root, accel=str(rig.accel), extra=("--backend", "libvirt", "--connect", uri)) as cluster:
        [workdir], [worker] = cluster.workdirs, cluster.workers
        judging = ClusterJudge(cluster.address)
        assert verdicts(judging(rec, jobs, checker, plan.workload, spec.seed, entries=entries)) == local
        kept = domains_of(uri, workdir)
        assert len(kept) == 1, kept  # its checker guest, up between runs
        assert verdicts(judging(rec, jobs, checker, plan.workload, spec.seed, entries=entries)) == local
        assert domains_of(uri, workdir) == kept  # the same domain checked the second run
        stop(worker)  # SIGTERM: the worker closes, and its plugin its guest
        assert worker.returncode == 0
        assert domains_of(uri, workdir) == []
        assert [p.name for p in (workdir / "tmp").iterdir()] == []  # no domain's staged files left
    assert not root.exists() and processes_under(root) == []
