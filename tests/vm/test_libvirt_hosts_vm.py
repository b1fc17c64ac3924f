"""Scale-out on two libvirt hosts of this machine: `qemu:///system`, and a second libvirtd
reached over loopback TCP. One recording is checked on one host, then on both while the
second host's daemon is killed with a batch in flight: no state is lost, and the verdicts and
the states' digests are those of the one-host run."""

import os
import threading

import pytest

from plugpull.check.checker import Checker
from plugpull.crash.judge import judge, remove_states
from plugpull.crash.record import record
from plugpull.crash.crashrun import crash_jobs
from plugpull.crash.spec import CrashSpec
from plugpull.errors import InfraError
from plugpull.guest.libvirt.instance import start_tcp_instance
from plugpull.guest.libvirt.machine import LibvirtBackend
from plugpull.guest.rig import Rig
from plugpull.powerloss.writelog import iter_entries

# Two hosts, a recording checked twice and a daemon killed: minutes under TCG, so on request
# (`make test-hosts`).
pytestmark = [pytest.mark.vm,
              pytest.mark.skipif(not os.environ.get("PLUGPULL_LIBVIRT_HOSTS"),
                                 reason="set PLUGPULL_LIBVIRT_HOSTS=1 (make test-hosts) for the two-host run")]

SPEC = CrashSpec(fs="ext4", mode="nobarrier", workload="fsync-files", params=(("count", 6),),
                 models=("prefix", "drop-unflushed"), states=4, seed=1, trigger="acks:4")


@pytest.fixture(scope="module")
def second_host(libvirt_backend):
    try:
        instance = start_tcp_instance()
    except InfraError as e:
        pytest.skip(f"a second libvirtd cannot run here: {e}")
    yield instance
    instance.stop()


class DropsOut:
    """A host whose daemon is SIGKILLed as its `at`-th checker guest is about to boot (its
    batch in flight); `killed` is set then, or when the run ends without it."""

    def __init__(self, backend: LibvirtBackend, instance, at: int = 2):
        self.backend, self.instance, self.at = backend, instance, at
        self.uri, self.launches, self.killed = backend.uri, 0, threading.Event()

    def reachable(self) -> bool:
        return self.backend.reachable()

    def machine(self, *args, **kwargs):
        self.launches += 1
        if self.launches == self.at:
            self.instance.kill_daemon()
            self.killed.set()
        return self.backend.machine(*args, **kwargs)


class WaitsFor:
    """A host that boots no guest before `event`: the other host takes batches first."""

    def __init__(self, backend, event: threading.Event):
        self.backend, self.event, self.uri = backend, event, backend.uri

    def machine(self, *args, **kwargs):
        self.event.wait(timeout=600)
        return self.backend.machine(*args, **kwargs)


def check_on(rig, hosts, rec, plan, entries, state_dir, batch):
    checker = Checker(Rig(rig.image, rig.accel, rig.backend, tuple(hosts)), plan.fs, batch=batch, workers=1)
    judged = judge(rec, crash_jobs(rec, entries, SPEC, plan.models), checker, plan.workload, SPEC.seed,
                   state_dir, entries)
    try:
        return checker.reached, [(str(j[0].verdict), j[2].digest()) for j in judged]
    finally:
        remove_states([j[2] for j in judged])


def test_two_hosts_judge_as_one_and_a_host_that_dies_loses_no_state(libvirt_rig, second_host, tmp_path):
    plan = SPEC.resolve()
    rec = record(tmp_path / "record", plan.recording_bed, plan.trigger, libvirt_rig)
    entries = list(iter_entries(rec.log))
    system = libvirt_rig.backend
    _, one = check_on(libvirt_rig, [system], rec, plan, entries, tmp_path / "one", batch=16)
    dying = DropsOut(LibvirtBackend(second_host.uri, second_host.qemu_pid_dir), second_host)
    try:
        reached, two = check_on(libvirt_rig, [WaitsFor(system, dying.killed), dying], rec, plan, entries,
                                tmp_path / "two", batch=2)
    finally:
        dying.killed.set()
    assert len({digest for _, digest in one}) >= 3, "too few distinct states to tell hosts apart"
    assert "infra-error" not in [verdict for verdict, _ in one]
    assert two == one
    assert reached.get(second_host.uri, 0) > 0 and reached.get(system.uri, 0) > 0, reached
    assert dying.launches >= 2 and not dying.reachable(), "the second host's daemon was not killed mid-run"
