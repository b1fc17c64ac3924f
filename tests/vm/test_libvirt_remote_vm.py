"""The libvirt backend's remote path on a second libvirtd reached over loopback TCP, forced
as if it were another machine: states uploaded as volumes, the channels and the console
opened through libvirt. One recording is judged on that host through its unix sockets and
hard links, then through the connection alone, hot-plugged and cold-plugged: the verdicts
and the states' digests are the same. No domain, pool, volume or daemon is left behind,
and the pool of a SIGKILLed plugpull goes when the next one starts a guest there."""

import glob
import os

import libvirt
import pytest

from plugpull.check.checker import Checker, Plug
from plugpull.crash.judge import judge, remove_states
from plugpull.crash.record import record
from plugpull.crash.crashrun import crash_jobs
from plugpull.crash.spec import CrashSpec
from plugpull.errors import InfraError
from plugpull.guest.libvirt import remote as libvirt_remote
from plugpull.guest.libvirt.instance import start_tcp_instance
from plugpull.guest.libvirt.machine import LibvirtBackend
from plugpull.guest.libvirt.daemon import pid_alive
from plugpull.guest.rig import Rig
from plugpull.powerloss.writelog import iter_entries

pytestmark = pytest.mark.vm
# Three checker guests and a recording under TCG: minutes, so with the two-host run
# (`make test-hosts`).
minutes = pytest.mark.skipif(not os.environ.get("PLUGPULL_LIBVIRT_HOSTS"),
                             reason="set PLUGPULL_LIBVIRT_HOSTS=1 (make test-hosts) for the remote-path run")

SPEC = CrashSpec(fs="ext4", mode="nobarrier", workload="fsync-files", params=(("count", 6),),
                 models=("prefix", "drop-unflushed"), states=4, seed=1, trigger="acks:4")
POOL_DIRS = f"{libvirt_remote.POOL_PARENT}/plugpull-*"


@pytest.fixture(scope="module")
def tcp_host():
    """The second daemon pair; after the module, its daemons are gone."""
    try:
        instance = start_tcp_instance()
    except InfraError as e:
        pytest.skip(f"a second libvirtd cannot run here: {e}")
    pids = [instance.pid("libvirtd"), instance.pid("virtlogd")]
    yield instance
    instance.stop()
    assert not [pid for pid in pids if pid and pid_alive(pid)], "a daemon of the second host outlived the test"


def left_on(uri: str) -> dict:
    conn = libvirt.open(uri)
    try:
        return {"domains": [d.name() for d in conn.listAllDomains() if d.name().startswith("plugpull-")],
                "pools": [p.name() for p in conn.listAllStoragePools()]}
    finally:
        conn.close()


@pytest.fixture
def calls(monkeypatch):
    """How often the remote path uploaded a file and opened channels through libvirt."""
    counts = {"upload": 0, "open_channels": 0}
    for cls, name in ((libvirt_remote.VolumePool, "upload"), (libvirt_remote.RemoteStaging, "open_channels")):
        original = getattr(cls, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            counts[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, counted)
    return counts


def judged_on(rig, backend, plug, rec, plan, entries, state_dir):
    checker = Checker(Rig(rig.image, rig.accel, backend), plan.fs, batch=16, plug=plug)
    judged = judge(rec, crash_jobs(rec, entries, SPEC, plan.models), checker, plan.workload, SPEC.seed,
                   state_dir, entries)
    try:
        return [(str(j[0].verdict), j[2].digest()) for j in judged]
    finally:
        remove_states([j[2] for j in judged])


@minutes
def test_the_remote_path_judges_as_the_local_one_and_leaves_nothing(rig, tcp_host, calls, tmp_path):
    pools_before = set(glob.glob(POOL_DIRS))
    plan = SPEC.resolve()
    rec = record(tmp_path / "record", plan.recording_bed, plan.trigger, rig)
    entries = list(iter_entries(rec.log))
    local = LibvirtBackend(tcp_host.uri, tcp_host.qemu_pid_dir)
    remote = LibvirtBackend(tcp_host.uri, remote=True)
    one = judged_on(rig, local, Plug.HOT, rec, plan, entries, tmp_path / "local")
    assert calls == {"upload": 0, "open_channels": 0}, "the local path went through the connection"
    hot = judged_on(rig, remote, Plug.HOT, rec, plan, entries, tmp_path / "remote-hot")
    cold = judged_on(rig, remote, Plug.BATCH, rec, plan, entries, tmp_path / "remote-cold")
    states = len({digest for _, digest in one})
    assert states >= 3 and "infra-error" not in [verdict for verdict, _ in one], one
    assert hot == one and cold == one
    assert calls["open_channels"] == 2, calls  # one hot guest, one cold-plugged batch
    assert calls["upload"] >= 2 * 2 + 2 * states, calls  # kernel and initramfs per guest, every state
    assert left_on(tcp_host.uri) == {"domains": [], "pools": []}
    assert set(glob.glob(POOL_DIRS)) == pools_before


KILLED = """
import sys, time, libvirt
from plugpull.guest.libvirt.remote import RemoteStaging
staging = RemoteStaging(libvirt.open(sys.argv[1]))
staging.volumes.upload(sys.argv[2])
print(staging.volumes.name, staging.volumes.path, flush=True)
time.sleep(600)
"""


def test_the_pool_of_a_sigkilled_plugpull_goes_with_the_next_guest(tcp_host, tmp_path):
    import signal
    import subprocess
    import sys
    state = tmp_path / "state.img"
    with open(state, "wb") as f:
        f.truncate(64 << 20)
    child = subprocess.Popen([sys.executable, "-c", KILLED, tcp_host.uri, str(state)], stdout=subprocess.PIPE,
                             text=True)
    try:
        name, path = child.stdout.readline().split()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert name in left_on(tcp_host.uri)["pools"] and os.path.isdir(path)
    conn = libvirt.open(tcp_host.uri)
    try:
        libvirt_remote.RemoteStaging(conn).remove()
    finally:
        conn.close()
    assert left_on(tcp_host.uri)["pools"] == [] and not os.path.exists(path)
