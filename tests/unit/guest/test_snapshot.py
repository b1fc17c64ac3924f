"""Saved checker guests: the key they are cached under, saving once, and booting when a saved
guest cannot be used. No VM: the guests here are stand-ins that record what was asked."""

from pathlib import Path

import pytest

from plugpull.errors import LaunchError
from plugpull.guest.qemu import snapshot
from plugpull.guest.contract.config import Accel, MachineSpec
from plugpull.guest.image.build import GuestImage

IMAGE = GuestImage("0123456789abcdef", Path("/cache/images/0123456789abcdef/kernel"),
                   Path("/cache/images/0123456789abcdef/initramfs.cpio"), "6.1.0-test")
SPEC = MachineSpec(scsi_controller=True)


class StandIn:
    """A guest that starts or raises LaunchError, and writes a file where it is saved."""

    def __init__(self, log: list, restore=None, starts: bool = True):
        self.log, self.restore, self.starts = log, restore, starts

    def __enter__(self):
        self.log.append(("restore" if self.restore else "boot", self.restore))
        if not self.starts:
            raise LaunchError("guest did not become ready: stand-in", ["qemu"], 1, "")
        return self

    def __exit__(self, *exc):
        pass

    def save_state(self, path: Path) -> None:
        self.log.append(("save", path))
        path.write_bytes(b"saved")


@pytest.fixture(autouse=True)
def fresh_process_memory(monkeypatch):
    monkeypatch.setattr(snapshot, "_unusable", set())


def test_a_saved_state_is_keyed_by_accelerator_machine_and_qemu_version_and_lives_beside_the_image():
    path = snapshot.saved_state_path(SPEC, IMAGE, Accel.TCG, "7.2.19")
    assert path.parent == IMAGE.kernel.parent / "saved"
    assert path != snapshot.saved_state_path(SPEC, IMAGE, Accel.KVM, "7.2.19")
    assert path != snapshot.saved_state_path(SPEC, IMAGE, Accel.TCG, "8.0.0")
    assert path != snapshot.saved_state_path(MachineSpec(scsi_controller=True, memory_mib=512), IMAGE, Accel.TCG,
                                             "7.2.19")
    assert path == snapshot.saved_state_path(MachineSpec(scsi_controller=True), IMAGE, Accel.TCG, "7.2.19")


def test_a_guest_is_saved_once_and_every_later_one_is_restored(tmp_path):
    log, path = [], tmp_path / "saved" / "tcg-key.vmstate"
    for _ in range(2):
        snapshot.restored_or_booted(lambda r: StandIn(log, r), path, lambda: StandIn(log))
    assert log == [("boot", None), ("save", path), ("restore", path), ("restore", path)]


def test_a_saved_guest_that_does_not_come_up_is_dropped_and_the_guest_booted(tmp_path):
    log, path = [], tmp_path / "tcg-key.vmstate"
    path.write_bytes(b"from another QEMU")
    guest = snapshot.restored_or_booted(lambda r: StandIn(log, r, starts=r is None), path, lambda: StandIn(log))
    assert guest.restore is None
    assert log == [("restore", path), ("boot", None)]
    assert not path.exists()
    snapshot.restored_or_booted(lambda r: StandIn(log, r, starts=r is None), path, lambda: StandIn(log))
    assert log[2:] == [("boot", None)], "not saved and restored again in the same process"


def test_a_guest_that_cannot_be_saved_is_booted(tmp_path):
    log, path = [], tmp_path / "tcg-key.vmstate"
    guest = snapshot.restored_or_booted(lambda r: StandIn(log, r), path, lambda: StandIn(log, starts=False))
    assert guest.restore is None and not path.exists()
    assert log == [("boot", None), ("boot", None)]
