"""The libvirt backend on a real libvirtd: a guest boots, runs commands, records its disk's
writes and loses power; states are hot-plugged through libvirt; and the central claim holds
on it (barrier clean, nobarrier unsafe). No domain of plugpull's outlives a test."""

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from plugpull.check.checker import Checker
from plugpull.check.crew import Crew
from plugpull.check.hot import HotPath
from plugpull.check.hotguest import HotGuest
from plugpull.crash.judge import judge, remove_states
from plugpull.crash.record import record
from plugpull.crash.crashrun import crash_jobs
from plugpull.crash.spec import CrashSpec
from plugpull.guest.contract.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import create_disk
from plugpull.powerloss.writelog import iter_entries, summarize

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


FULL = bool(os.environ.get("PLUGPULL_LIBVIRT_STEPS"))
# The claim is the backend's here (QEMU's own runs it per filesystem and mode elsewhere): one
# cell per mode by default, the four with PLUGPULL_LIBVIRT_STEPS (`make test-all`).
CELLS = ([(fs, mode) for fs in ("xfs", "ext4") for mode in ("barrier", "nobarrier")] if FULL
         else [("xfs", "barrier"), ("ext4", "nobarrier")])


def claim(fs: str, mode: str, full: bool) -> CrashSpec:
    """The claim's cell: a few fsync'd files, cut after the acks; with `full`, the larger
    run (6 states of 16 files) that `PLUGPULL_LIBVIRT_STEPS` asks for."""
    count, acks, states = (16, 12, 6) if full else (6, 4, 2)
    return CrashSpec(fs=fs, mode=mode, workload="fsync-files", params=(("count", count),),
                     models=("drop-unflushed",), states=states, seed=1, trigger=f"acks:{acks}", workers=1)


@dataclass
class KeptGuestChecker(Checker):
    """Checks states on one checker guest kept up for every cell, each state hot-plugged
    through libvirt: four cells cost one checker boot, not four."""

    guest: object = None

    def check(self, states, progress=None, collect=None):
        out = []
        for index, (state, what) in enumerate(zip(states, collect)):
            obs, trusted = HotPath(self.rig, self.state_check, Crew()).plug_and_check(self.guest, index, state, what)
            assert trusted, f"the kept checker guest cannot go on after state {index}: {obs}"
            out.append(obs)
        return out


def record_cell(rig, root, cell) -> tuple:
    spec = claim(*cell, full=FULL)
    plan = spec.resolve()
    rec = record(root / f"{cell[0]}-{cell[1]}", plan.recording_bed, plan.trigger, rig)
    return spec, plan, rec


@pytest.fixture(scope="module")
def claim_cells(libvirt_rig, tmp_path_factory):
    """Every cell recorded (two at a time, while the checker guest boots), then judged on
    that one guest: {cell: (record meta, [(verdict, acks owed)])}."""
    root = tmp_path_factory.mktemp("claim")
    with ThreadPoolExecutor(3) as pool:
        booting = pool.submit(HotGuest, libvirt_rig, set())
        recorded = dict(zip(CELLS, pool.map(lambda cell: record_cell(libvirt_rig, root, cell), CELLS)))
        guest = booting.result()
    try:
        out = {}
        for cell, (spec, plan, rec) in recorded.items():
            checker = KeptGuestChecker(libvirt_rig, plan.fs, guest=guest)
            entries = list(iter_entries(rec.log))
            judged = judge(rec, crash_jobs(rec, entries, spec, plan.models), checker, plan.workload, spec.seed,
                           root / f"states-{cell[0]}-{cell[1]}", entries)
            out[cell] = rec.meta, [(str(j[0].verdict), len(j[3]), j[0].reason) for j in judged]
            remove_states([j[2] for j in judged])
        yield out
    finally:
        guest.close()


@pytest.mark.parametrize("fs, mode", CELLS)
def test_the_central_claim_holds_on_libvirt(claim_cells, fs, mode):
    meta, judged = claim_cells[fs, mode]
    verdicts = [verdict for verdict, _, _ in judged]
    assert "infra-error" not in verdicts
    if mode == "barrier":
        assert sum(owed for _, owed, _ in judged) > 0
        assert set(verdicts) == {"clean"}
    else:
        assert meta["log"]["flushes"] == 0
        assert "data-loss" in verdicts
