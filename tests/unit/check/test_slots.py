"""States copied into disks a hot checker guest keeps plugged in (`check.slots`): the same
verdicts as states plugged in and out, each slot refilled and forgotten by the guest before
its next state, the host's fsck reading the slot itself, and states that do not fit going
in plugged as before. On the fake backend, whose guest answers from its cache a disk it
read before unless told to forget it. No VM."""

import os

import pytest
from tests.unit.guest import test_backend
from tests.unit.check.test_hostfsck import ExportingBackend, host_fsck_of_the_fake, second_state_corrupt  # noqa: F401
from tests.unit.check.test_hot_checker import EXPECTED, attached, hot_judged, verdicts

from plugpull.check import hostfsck
from plugpull.check.slots import Slots, lun
from plugpull.check.verdict import Verdict
from plugpull.sparse import copy_sparse

WITH_HOST_FSCK = [Verdict.CLEAN, Verdict.FS_CORRUPT] + EXPECTED[2:]


@pytest.fixture
def rec(tmp_path):
    return test_backend.rec.__wrapped__(tmp_path)


def pp_checks(guest) -> list[str]:
    return [c for c in guest.commands if "pp-check" in c]


def test_two_slots_check_four_states_in_turn_with_the_verdicts_of_plugged_states(rec, tmp_path, host_fsck_of_the_fake):
    plugged = hot_judged(rec, ExportingBackend(second_state_corrupt), tmp_path / "plugged", per_command=2)
    backend = ExportingBackend(second_state_corrupt)
    in_slots = hot_judged(rec, backend, tmp_path / "slots", per_command=2, slots=True)
    assert verdicts(in_slots) == verdicts(plugged) == WITH_HOST_FSCK
    assert [r.verdict.reason for r in in_slots] == [r.verdict.reason for r in plugged]
    [guest] = backend.guests
    assert [os.path.basename(p) for p in attached(guest)] == ["slot0.img", "slot1.img"], "plugged in once"
    assert not [c for c in guest.commands if c.startswith(": detach ")] and not guest.exports.added
    assert pp_checks(guest) == ["for d in sda sdb; do blockdev --flushbufs /dev/$d || exit 1; done; "
                                "pp-check --many --no-fsck xfs pp tar 0 1"] * 2


def test_a_guest_not_told_to_forget_a_slot_sees_its_last_state_again(rec, tmp_path, host_fsck_of_the_fake, monkeypatch):
    """The fake's cache is what the forget command is for: without it the second command's
    states would be judged by what the guest read of the first ones."""
    monkeypatch.setattr(Slots, "forget_command", lambda self, count: "")
    stale = hot_judged(rec, ExportingBackend(second_state_corrupt), tmp_path, per_command=2, slots=True)
    assert verdicts(stale) != WITH_HOST_FSCK


def test_the_hosts_fsck_reads_the_slot_the_guest_left(rec, tmp_path, monkeypatch):
    read = []
    monkeypatch.setattr(hostfsck, "available", lambda mount_type: True)
    monkeypatch.setattr(hostfsck, "run", lambda mount_type, path, timeout: read.append(path) or (0, b""))
    backend = ExportingBackend(test_backend.outcome_of)
    hot_judged(rec, backend, tmp_path, per_command=8, slots=True)
    assert [p.name for p in read] == [f"slot{k}.img" for k in range(4)]


def test_without_the_hosts_fsck_or_with_states_of_two_sizes_the_states_are_plugged_in(rec, tmp_path, monkeypatch):
    monkeypatch.setattr(hostfsck, "available", lambda mount_type: False)
    backend = ExportingBackend(test_backend.outcome_of)
    assert verdicts(hot_judged(rec, backend, tmp_path / "guest-fsck", per_command=8, slots=True)) == EXPECTED
    assert not any("slot" in p for p in attached(backend.guests[0]))

    monkeypatch.setattr(hostfsck, "available", lambda mount_type: True)
    monkeypatch.setattr(hostfsck, "run", lambda mount_type, path, timeout: (0, b""))
    sizes = iter(range(1, 100))
    monkeypatch.setattr(os.path, "getsize", lambda path: next(sizes))
    backend = ExportingBackend(test_backend.outcome_of)
    assert verdicts(hot_judged(rec, backend, tmp_path / "sizes", per_command=8, slots=True)) == EXPECTED
    assert not any("slot" in p for p in attached(backend.guests[0]))


class Plugs:
    def __init__(self):
        self.specs = []

    def attach_disk(self, spec, wait=True):
        from plugpull.guest.contract.backend import AttachedDisk
        self.specs.append((spec, wait))
        return AttachedDisk(f"hotdisk{len(self.specs) + 4}", f"plugpull{len(self.specs) + 4}", f"sd{'xyz'[len(self.specs) - 1]}")


def test_a_slot_is_a_raw_disk_written_in_place_and_refilled_with_each_states_bytes_and_holes(tmp_path):
    plugs = Plugs()
    slots = Slots(plugs, tmp_path, 1 << 20, 3)
    assert [(s.path.name, s.snapshot, w) for s, w in plugs.specs] == [(f"slot{k}.img", False, True) for k in range(3)]
    big, small = tmp_path / "big.img", tmp_path / "small.img"
    for path, data in ((big, {0: b"B" * 4096, 8192: b"b" * 4096}), (small, {4096: b"s" * 512})):
        with open(path, "wb") as f:
            f.truncate(1 << 20)
            for at, chunk in data.items():
                f.seek(at)
                f.write(chunk)
    other = tmp_path / "other.img"
    other.write_bytes(b"o" * 4096)
    assert slots.fits([big, small]) and not slots.fits([big] * 4) and not slots.fits([big, other])
    inode = os.stat(slots.paths[0]).st_ino
    assert slots.fill([big]) == [5]
    assert slots.fill([small, big]) == [5, 6]
    assert slots.paths[0].read_bytes() == small.read_bytes() and slots.paths[1].read_bytes() == big.read_bytes()
    assert os.stat(slots.paths[0]).st_ino == inode, "the file QEMU has open, not a new one"
    assert os.stat(slots.paths[0]).st_blocks * 512 < 64 * 1024, "holes stay holes"
    assert slots.forget_command(2) == "for d in sdx sdy; do blockdev --flushbufs /dev/$d || exit 1; done; "


def test_only_a_plugged_disks_serial_has_a_lun():
    assert lun("plugpull17") == 17
    for serial in ("plugpull", "disk3", "plugpullx"):
        with pytest.raises(ValueError):
            lun(serial)


def test_copy_sparse_into_a_file_of_other_bytes_leaves_none_of_them(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.write_bytes(b"x" * 8192)
    with open(new, "wb") as f:
        f.truncate(8192)
    copy_sparse(new, old)
    assert old.read_bytes() == bytes(8192)
