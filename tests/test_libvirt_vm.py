"""The libvirt backend on a real libvirtd: a guest boots, runs commands, records its disk's
writes and loses power; states are hot-plugged through libvirt; and the central claim holds
on it (barrier clean, nobarrier unsafe). No domain of plugpull's outlives a test."""

import hashlib
import os

import pytest

from plugpull.guest.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.machine import create_disk
from plugpull.lab.crash import run_crash
from plugpull.lab.spec import CrashSpec
from plugpull.powerloss.writelog import summarize

pytestmark = pytest.mark.vm
# The crash runs below already boot, record, cut and hot-plug on libvirt; these finer tests of
# each step add a minute to `make test`, so they run on request.
each_step = pytest.mark.skipif(not os.environ.get("PLUGPULL_LIBVIRT_STEPS"),
                               reason="set PLUGPULL_LIBVIRT_STEPS=1 to test each libvirt step on its own")


def plugpull_domains(backend) -> list[str]:
    import libvirt
    conn = libvirt.open(backend.uri)
    try:
        return [d.name() for d in conn.listAllDomains() if d.name().startswith("plugpull-")]
    finally:
        conn.close()


@pytest.fixture
def no_domain_left(libvirt_backend):
    yield
    assert plugpull_domains(libvirt_backend) == []


@each_step
def test_a_libvirt_guest_records_its_writes_and_loses_power(libvirt_rig, tmp_path, no_domain_left):
    log = tmp_path / "disk.log"
    disk = DiskSpec(create_disk(tmp_path / "disk.img", 64), Bus.AHCI, True, write_log=log)
    with libvirt_rig.machine(MachineSpec(disks=(disk,)), console_log=tmp_path / "console.log") as m:
        assert m.run("cat /sys/block/sda/queue/write_cache").text.strip() == "write back"
        m.run("dd if=/dev/urandom of=/dev/sda bs=4k count=8 conv=fsync 2>/dev/null").check()
        m.power_cut()
        assert not m.alive()
        assert m.domain_name not in plugpull_domains(libvirt_rig.backend)
    summary = summarize(log)
    assert summary.writes >= 1 and summary.flushes >= 1
    assert log.stat().st_size == m.cut[log], "the log gained entries after the power cut"


@each_step
def test_a_state_is_hot_plugged_through_libvirt_and_left_unchanged(libvirt_rig, tmp_path, no_domain_left):
    state = tmp_path / "state.img"
    state.write_bytes(b"plugpull-state" + bytes(1 << 20))
    before = hashlib.sha256(state.read_bytes()).hexdigest()
    with libvirt_rig.machine(MachineSpec(scsi_controller=True)) as m:
        for _ in range(2):
            plugged = m.attach_disk(DiskSpec(state, Bus.SCSI, True, host_flush=False, snapshot=True))
            assert m.run("head -c 14 /dev/%s", plugged.device).text == "plugpull-state"
            m.run("echo scribble | dd of=/dev/%s conv=fsync 2>/dev/null", plugged.device).check()
            m.detach_disk(plugged)
            assert m.run("test -e /dev/%s", plugged.device).rc != 0
    assert hashlib.sha256(state.read_bytes()).hexdigest() == before


def claim(fs: str, mode: str, states: int) -> CrashSpec:
    return CrashSpec(fs=fs, mode=mode, workload="fsync-files", params=(("count", 16),),
                     models=("drop-unflushed",), states=states, seed=1, trigger="acks:12", workers=1)


@pytest.mark.parametrize("mode, states", [("barrier", 6), ("nobarrier", 6)])
def test_the_central_claim_holds_on_libvirt(libvirt_rig, tmp_path, no_domain_left, mode, states):
    run = run_crash(claim("xfs", mode, states), libvirt_rig, tmp_path / "crash")
    verdicts = [s.verdict for s in run.states]
    assert run.summary["infra-error"] == 0
    if mode == "barrier":
        assert sum(s.acks_required for s in run.states) > 0
        assert set(verdicts) == {"clean"}
    else:
        assert run.record["log"]["flushes"] == 0
        assert "data-loss" in verdicts
