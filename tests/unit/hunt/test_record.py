"""The hunt's recorder keeps one disk plugged into its guest for many workloads: each workload
starts on the formatted image's bytes, and its record holds its own log entries alone,
its acks stamped in that log. A fake guest stands in for QEMU: it appends entries to the
disk's write log as blklogwrites does (the first at the second sector, none for the
superblock until a flush) and writes to the disk's file."""

import os
import queue
import subprocess
from pathlib import Path

import pytest

from plugpull.check.console import ConsoleWatch
from plugpull.guest.contract.backend import AttachedDisk
from plugpull.guest.contract.channel import GuestResult, StampedLine
from plugpull.hunt import record as record_mod
from plugpull.hunt.record import Failed, KeptDisk, Recorder, cut_out
from plugpull.powerloss.writelog import HEADER, SECTOR, iter_entries
from plugpull.testbed.fs import filesystem, mode as mode_named

BASE = b"formatted".ljust(4096, b"\0")


class FakeAcks:
    def __init__(self):
        self.lines, self.stamp = queue.Queue(), None

    def set_stamp(self, stamp) -> None:
        self.stamp = stamp

    def send(self, text: str) -> None:
        self.lines.put(StampedLine(self.stamp(), 0.0, text))

    def get(self, timeout: float):
        return self.lines.get(timeout=timeout)


class FakeMachine:
    """Runs a workload as a list of (sector, byte) writes with an ack after each and `done`;
    its umount writes one more sector."""

    def __init__(self, scratch: Path, runs: list):
        self.acks, self.runs, self.scratch = FakeAcks(), runs, scratch
        self.plugged: dict[str, object] = {}
        self.attaches = self.detaches = 0
        self.seen_at_start: list[bytes] = []
        self.starts: list[str] = []

    def attach_disk(self, spec, wait=True):
        self.attaches += 1
        handle = f"hotdisk{self.attaches}"
        self.plugged[handle] = spec
        return AttachedDisk(handle, f"plugpull{self.attaches}", f"sd{'abcdefgh'[self.attaches]}" if wait else "")

    def detach_disk(self, disk, wait=True):
        self.detaches += 1
        del self.plugged[disk.handle]

    def _log(self, sector: int, byte: int) -> None:
        spec = next(iter(self.plugged.values()))
        with open(spec.path, "r+b") as f:
            f.seek(sector * SECTOR)
            f.write(bytes([byte]) * SECTOR)
        with open(spec.write_log, "r+b") as f:
            at = max(os.fstat(f.fileno()).st_size, SECTOR)
            f.seek(at)
            f.write(HEADER.pack(sector, 1, 0, 0).ljust(SECTOR, b"\0") + bytes([byte]) * SECTOR)

    def run(self, command: str, *args, **kwargs) -> GuestResult:
        out = b""
        if "/tmp/workload.sh" in command:
            self.starts.append(command)
            spec = next(iter(self.plugged.values()))
            self.seen_at_start.append(spec.path.read_bytes()[:len(BASE)])
            writes, rc = self.runs.pop(0)
            for n, (sector, byte) in enumerate(writes):
                self._log(sector, byte)
                self.acks.send(f"ack {n}")
            self.acks.send(f"done {rc}")
            out = b"queue=write back\n"
        elif command.startswith("umount"):
            self._log(7, 0xEE)
        return GuestResult(command, 0, out, b"")

    def io_error(self):
        return None


class FakeGuest:
    def __init__(self, machine: FakeMachine, scratch: Path):
        self.machine, self.scratch = machine, scratch
        (scratch / "console.log").write_text("")
        self.console = ConsoleWatch(scratch / "console.log")
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def recorder(tmp_path, monkeypatch):
    """A recorder on a fake guest; `runs` (list of (writes, exit code)) is what its workloads do."""
    base = tmp_path / "work" / "mkfs.img"
    base.parent.mkdir()
    base.write_bytes(BASE.ljust(8 * SECTOR, b"\0"))
    runs: list = []
    machine = FakeMachine(tmp_path, runs)
    monkeypatch.setattr(record_mod, "HotGuest", lambda rig, running: FakeGuest(machine, tmp_path))
    monkeypatch.setattr(Recorder, "_meta", lambda self, workload, guest: {})
    rec = Recorder(None, filesystem("ext4"), mode_named("barrier"), base, 64)
    rec.machine, rec.runs = machine, runs
    yield rec
    rec.close()


class Workload:
    def script(self, mountpoint: str) -> str:
        return "true"


def entries(rec) -> list[tuple[int, bytes]]:
    with open(rec.log, "rb") as f:
        return [(e.sector, (f.seek(e.data_offset), f.read(1))[1]) for e in iter_entries(rec.log)]


def test_each_workload_records_its_own_entries_on_a_disk_plugged_in_once(recorder, tmp_path):
    recorder.runs += [([(1, 0xA1), (2, 0xA2)], 0), ([(3, 0xB1)], 0)]
    first = recorder.record(Workload(), tmp_path / "w1")
    second = recorder.record(Workload(), tmp_path / "w2")
    assert entries(first) == [(1, b"\xa1"), (2, b"\xa2")]  # not the umount's write (sector 7)
    assert entries(second) == [(3, b"\xb1")]  # nor the first workload's
    assert [(a.ident, a.position) for a in first.acks] == [(0, 1), (1, 2)]
    assert [(a.ident, a.position) for a in second.acks] == [(0, 1)]
    assert recorder.machine.attaches == 1 and recorder.machine.detaches == 0
    assert recorder.machine.seen_at_start == [BASE, BASE]  # the first workload's writes undone
    assert all(start.startswith("dev=sdb; blockdev --flushbufs /dev/$dev && ") for start in recorder.machine.starts)


def test_without_keep_disk_each_workload_plugs_a_disk_of_its_own_and_waits_for_it(recorder, tmp_path):
    recorder.keep_disk = False
    recorder.runs += [([(1, 0xA1)], 0), ([(3, 0xB1)], 0)]
    first = recorder.record(Workload(), tmp_path / "w1")
    second = recorder.record(Workload(), tmp_path / "w2")
    assert (recorder.machine.attaches, recorder.machine.detaches) == (2, 1)
    assert [entries(first), entries(second)] == [[(1, b"\xa1")], [(3, b"\xb1")]]
    assert ["plugpull1" in recorder.machine.starts[0], "plugpull2" in recorder.machine.starts[1]] == [True, True]
    assert not any("flushbufs" in start for start in recorder.machine.starts)


def test_a_disk_whose_log_grew_past_the_limit_is_replaced_and_its_files_removed(recorder, tmp_path, monkeypatch):
    monkeypatch.setattr(record_mod, "ROTATE_BYTES", 2 * SECTOR)
    recorder.runs += [([(1, 0xA1)], 0), ([(3, 0xB1)], 0)]
    recorder.record(Workload(), tmp_path / "w1")
    old = recorder._disk
    second = recorder.record(Workload(), tmp_path / "w2")
    assert (recorder.machine.attaches, recorder.machine.detaches) == (2, 1)
    assert not old.path.exists() and not old.log.exists()
    assert entries(second) == [(3, b"\xb1")]


def test_a_workload_that_failed_leaves_no_record_and_the_next_gets_a_fresh_disk(recorder, tmp_path):
    recorder.runs += [([(1, 0xA1)], 1), ([(3, 0xB1)], 0)]
    failed = recorder.record(Workload(), tmp_path / "w1")
    assert isinstance(failed, Failed) and not failed.kernel and "exited 1" in failed.why
    second = recorder.record(Workload(), tmp_path / "w2")
    assert (recorder.machine.attaches, recorder.machine.detaches) == (2, 1)
    assert entries(second) == [(3, b"\xb1")]


def test_a_stretch_cut_out_of_a_log_is_a_log_of_its_own_and_a_torn_last_entry_is_left_torn(tmp_path):
    log = tmp_path / "kept.write.log"
    def entry(sector: int) -> bytes:
        return HEADER.pack(sector, 1, 0, 0).ljust(SECTOR, b"\0") + bytes([sector]) * SECTOR

    log.write_bytes(bytes(SECTOR) + entry(1) + entry(2) + entry(3))
    disk = KeptDisk(AttachedDisk("h", "plugpull1", "sda"), tmp_path / "disk.img", log)
    start = SECTOR + len(entry(1))
    assert disk.since(start) == SECTOR + 2 * len(entry(1))
    cut_out(log, start, disk.since(start), tmp_path / "all.log")
    assert [e.sector for e in iter_entries(tmp_path / "all.log")] == [2, 3]
    cut_out(log, start, disk.since(start) - 100, tmp_path / "torn.log")
    assert [e.sector for e in iter_entries(tmp_path / "torn.log")] == [2]


def test_the_start_command_writes_the_script_byte_for_byte_with_the_shells_printf(recorder, tmp_path):
    """The script goes into the guest by the shell's printf, not a base64 pipeline: the same
    bytes, whatever quotes, percents, backslashes and newlines it holds."""
    class Tricky(Workload):
        def script(self, mountpoint: str) -> str:
            return "echo 'it''s' \"%s %d\" \\n $HOME `x`\n\tdone\n"

    command = recorder._start_command(AttachedDisk("h", "plugpull1", "sdb"), Tricky())
    printf = next(step for step in command.split(" && ") if step.startswith("printf %s "))
    target = tmp_path / "workload.sh"
    subprocess.run(["sh", "-c", printf.replace("/tmp/workload.sh", str(target))], check=True)
    assert target.read_text() == Tricky().script("/mnt")
