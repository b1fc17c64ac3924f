"""A crash state as the checker takes it: one disk image, or a disk and its log disk."""

import pytest

from plugpull.powerloss.crashstate import CrashState, content_digest


def image(path, data: bytes):
    path.write_bytes(data)
    return path


def test_single_disk_state(tmp_path):
    state = CrashState.of(image(tmp_path / "s.img", b"data"))
    assert state.disk == tmp_path / "s.img" and state.log_disk is None
    assert state.digest() == content_digest(state.disk)


def test_state_with_a_log_disk_digests_both_in_order(tmp_path):
    disk, log = image(tmp_path / "s.img", b"data"), image(tmp_path / "s2.img", b"log")
    state = CrashState.of(disk, log)
    assert (state.disk, state.log_disk) == (disk, log)
    assert state.digest() == content_digest(disk) + content_digest(log)
    assert state.digest() != CrashState.of(log, disk).digest()


def test_digest_follows_the_contents(tmp_path):
    state = CrashState.of(image(tmp_path / "s.img", b"data"))
    before = state.digest()
    image(state.disk, b"datb")
    assert state.digest() != before


def test_remove_deletes_every_image(tmp_path):
    state = CrashState.of(image(tmp_path / "s.img", b"x"), image(tmp_path / "s2.img", b"y"))
    state.remove()
    assert not state.disk.exists() and not state.log_disk.exists()
    state.remove()  # already gone: no error


@pytest.mark.parametrize("count", [0, 9])
def test_a_state_has_one_to_eight_images(tmp_path, count):
    with pytest.raises(ValueError):
        CrashState(tuple(tmp_path / f"{i}.img" for i in range(count)))


def test_states_are_values(tmp_path):
    assert CrashState.of(tmp_path / "a.img") == CrashState.of(str(tmp_path / "a.img"))
    assert len({CrashState.of(tmp_path / "a.img"), CrashState.of(tmp_path / "a.img")}) == 1
