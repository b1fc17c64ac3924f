"""plugpull/locks.py: every lock is flock on a lock file; each probe is fed a lock that is held
and one that is not. flock locks of two open files conflict in one process too, so one
process can hold and probe."""

import os

import pytest

from plugpull.locks import exclusive, free, held, shared, take_shared


def test_held_says_whether_another_holds_the_lock_shared_or_exclusive(tmp_path):
    lock = tmp_path / "x.lock"
    assert held(lock) is False and not lock.exists()  # no such file: not held, and none made
    with shared(lock):
        assert held(lock) is True
    assert held(lock) is False
    with exclusive(lock):
        assert held(lock) is True
    fd = take_shared(lock)
    assert held(lock) is True
    os.close(fd)
    assert held(lock) is False


def test_free_takes_a_lock_nobody_holds_and_only_then(tmp_path):
    lock = tmp_path / "marker"
    with free(lock) as mine:
        assert mine is False  # no file: nothing to take
    lock.write_text("")
    with free(lock) as mine:
        assert mine is True and held(lock)
        with free(lock) as again:
            assert again is False
    with shared(lock):
        with free(lock) as mine:
            assert mine is False


def test_a_lock_file_is_not_taken_through_a_link(tmp_path):
    (tmp_path / "elsewhere").write_text("")
    (tmp_path / "x.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        with exclusive(tmp_path / "x.lock"):
            pass
    with free(tmp_path / "x.lock") as mine:
        assert mine is False


def test_exclusive_makes_the_lock_and_its_folder(tmp_path):
    with exclusive(tmp_path / "a" / "b" / ".lock"):
        assert (tmp_path / "a" / "b" / ".lock").is_file()
