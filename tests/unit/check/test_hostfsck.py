"""fsck on the host (`hostfsck`, `guest.qemu.export`, the hot path's `--no-fsck`): the host's fsck
on real image files, the export bookkeeping with a fake QMP, and the hot path on the fake
backend: the same verdicts as the guest's fsck, and a QEMU that cannot export sends the
states back to the guest's fsck. No VM."""

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from tests.unit.guest import test_backend
from tests.fake_backend import FakeBackend, FakeGuest
from tests.unit.guest.test_backend import WL, outcome_of
from tests.unit.check.test_hot_checker import EXPECTED, hot_judged, verdicts

from plugpull.check import hostfsck
from plugpull.check.verdict import Verdict
from plugpull.errors import GuestError, InfraError
from plugpull.guest.qemu.export import Exports


@pytest.fixture
def rec(tmp_path):
    return test_backend.rec.__wrapped__(tmp_path)


def image(tmp_path: Path, mib: int, *mkfs: str) -> Path:
    path = tmp_path / "fs.img"
    with open(path, "wb") as f:
        f.truncate(mib << 20)
    subprocess.run([*mkfs, str(path)], check=True, capture_output=True)
    return path


def zero_superblock(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(bytes(1024))


def test_the_hosts_xfs_repair_passes_a_clean_image_and_fails_a_broken_one(tmp_path):
    path = image(tmp_path, 512, "mkfs.xfs", "-q")
    rc, out = hostfsck.run("xfs", path, timeout=60)
    assert rc == 0 and b"Phase 7" in out
    assert b"host filesystem geometry" not in out, "the image-file notice is not the state's evidence"
    zero_superblock(path, 0)
    rc, out = hostfsck.run("xfs", path, timeout=60)
    assert rc != 0, out


def test_the_hosts_e2fsck_passes_a_clean_image_and_fails_a_broken_one(tmp_path):
    path = image(tmp_path, 16, "mkfs.ext4", "-q", "-F")
    assert hostfsck.run("ext4", path, timeout=60)[0] == 0
    zero_superblock(path, 1024)
    rc, out = hostfsck.run("ext4", path, timeout=60)
    assert rc != 0 and b"superblock" in out.lower()


def test_no_fsck_for_an_unknown_filesystem_and_a_hung_one_is_a_harness_error(tmp_path, monkeypatch):
    assert hostfsck.command("zfs", tmp_path) is None and not hostfsck.available("zfs")
    with pytest.raises(InfraError, match="no fsck for zfs"):
        hostfsck.run("zfs", tmp_path, timeout=1)
    monkeypatch.setitem(hostfsck.COMMANDS, "xfs", ["sh", "-c", "sleep 5", "sh"])
    with pytest.raises(InfraError, match="did not finish"):
        hostfsck.run("xfs", tmp_path, timeout=0.2)


def test_the_fsck_goes_into_the_states_files_as_the_guest_would_have_written_it():
    parts = {"keys": b"mount_rc=0\ncollect_rc=0\numount_rc=0\n", "fsck": b"", "mount": b"", "dmesg": b"", "blob": b"x"}
    done = hostfsck.with_fsck(parts, 1, b"bad inode\n")
    assert done["keys"].endswith(b"umount_rc=0\nfsck_rc=1\n") and done["fsck"] == b"bad inode\n"
    assert done["blob"] == b"x"
    assert hostfsck.with_fsck({**parts, "keys": b"mount_rc=32"}, 0, b"")["keys"] == b"mount_rc=32\nfsck_rc=0\n"


class FakeQmp:
    def __init__(self, fail: str = ""):
        self.sent, self.waited, self.fail = [], [], fail

    def command(self, name, arguments):
        if name == self.fail:
            raise GuestError(f"QMP {name} failed")
        self.sent.append((name, arguments))

    def wait_event(self, event, id):
        self.waited.append((event, id))


def test_an_export_is_a_file_until_it_is_removed_and_qemu_is_told_both(tmp_path):
    qmp = FakeQmp()
    exports = Exports(qmp.command, qmp.wait_event, tmp_path)
    path = exports.add("hotdisk3")
    assert path.is_file() and path.parent == tmp_path
    name, args = qmp.sent[0]
    assert name == "block-export-add"
    assert args == {"type": "fuse", "id": "export-hotdisk3", "node-name": "hotdisk3",
                    "mountpoint": str(path), "writable": False}
    exports.remove("hotdisk3")
    assert qmp.sent[1] == ("block-export-del", {"id": "export-hotdisk3"})
    assert qmp.waited == [("BLOCK_EXPORT_DELETED", "export-hotdisk3")]
    assert not path.exists()


def test_an_export_qemu_refused_leaves_no_file_and_abandon_lets_go_of_the_rest(tmp_path):
    exports = Exports(FakeQmp(fail="block-export-add").command, FakeQmp().wait_event, tmp_path)
    with pytest.raises(GuestError):
        exports.add("hotdisk1")
    assert not list(tmp_path.iterdir())
    kept = Exports(FakeQmp().command, FakeQmp().wait_event, tmp_path)
    kept.add("hotdisk2")
    kept.abandon()  # not mounted here: detaching it fails quietly
    with pytest.raises(KeyError):
        kept.remove("hotdisk2")


class FakeExports:
    """Exports a fake guest's state disk as the state file itself."""

    def __init__(self, fail: bool = False):
        self.fail, self.added, self.removed = fail, [], []

    def add(self, handle: str) -> Path:
        if self.fail:
            raise GuestError("QMP block-export-add failed: no FUSE here")
        self.added.append(handle)
        return self.paths[handle]

    def remove(self, handle: str) -> None:
        self.removed.append(handle)


class ExportingBackend(FakeBackend):
    def __init__(self, outcome, fail: bool = False):
        super().__init__([], outcome)
        self.fail = fail

    def machine(self, *args, **kwargs) -> FakeGuest:
        guest = super().machine(*args, **kwargs)
        guest.exports = FakeExports(self.fail)
        guest.exports.paths = _DiskPaths(guest)
        return guest


class _DiskPaths:
    def __init__(self, guest):
        self.guest = guest

    def __getitem__(self, handle: str) -> Path:
        return self.guest._disks[int(handle.removeprefix("fake"))]


def second_state_corrupt(path):
    outcome = outcome_of(path)
    return replace(outcome, fsck_rc=1) if set(outcome.files) == {WL.path(1), WL.path(2)} else outcome


@pytest.fixture
def host_fsck_of_the_fake(monkeypatch):
    """The host's fsck of a fake state: the fsck_rc its outcome gives."""
    monkeypatch.setattr(hostfsck, "available", lambda mount_type: True)
    monkeypatch.setattr(hostfsck, "run", lambda mount_type, path, timeout:
                        (second_state_corrupt(path).fsck_rc, b"host fsck\n"))


def test_the_host_fscks_every_state_and_the_verdicts_are_the_guests(rec, tmp_path, host_fsck_of_the_fake):
    in_guest = hot_judged(rec, FakeBackend([], second_state_corrupt), tmp_path / "guest", per_command=8)
    backend = ExportingBackend(second_state_corrupt)
    on_host = hot_judged(rec, backend, tmp_path / "host", per_command=8)
    assert verdicts(on_host) == verdicts(in_guest) == [Verdict.CLEAN, Verdict.FS_CORRUPT] + EXPECTED[2:]
    [guest] = backend.guests
    assert [c for c in guest.commands if c.startswith("pp-check")] == ["pp-check --many --no-fsck xfs pp tar 0 1 2 3"]
    assert guest.exports.added == guest.exports.removed == ["fake0", "fake1", "fake2", "fake3"]


def test_a_qemu_that_cannot_export_sends_the_states_to_the_guests_fsck(rec, tmp_path, host_fsck_of_the_fake):
    backend = ExportingBackend(second_state_corrupt, fail=True)
    results = hot_judged(rec, backend, tmp_path, per_command=8)
    assert verdicts(results) == [Verdict.CLEAN, Verdict.FS_CORRUPT] + EXPECTED[2:]
    first, fresh = backend.guests
    assert [c for c in first.commands if c.startswith("pp-check")] == ["pp-check --many --no-fsck xfs pp tar 0 1 2 3"]
    assert len([c for c in fresh.commands if "pp-check " in c]) == 4, "each state checked alone, fsck in the guest"
    assert not any("--no-fsck" in c for c in fresh.commands)
