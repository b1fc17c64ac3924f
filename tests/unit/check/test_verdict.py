"""Verdicts, the oracle's rules, and the fsck checkers on images that must be flagged."""

import io
import subprocess
import tarfile

import pytest

from plugpull.check.checker import observation_from, parse_report
from plugpull.check.verdict import Ack, Observation, Verdict, classify, files_of, required_acks, sums_of
from plugpull.testbed.fs import filesystem
from plugpull.testbed.workloads import FsyncFiles

XFS, EXT4 = filesystem("xfs"), filesystem("ext4")
WL = FsyncFiles(count=3, seed=1)


def tar_of(files: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


ALL_FILES = files_of(tar_of({WL.path(i): WL.content(i) for i in (1, 2, 3)}))


def test_an_ack_is_owed_once_the_cut_covers_its_stamp():
    acks = [Ack(1, 4096, 5), Ack(2, 9000, 9), Ack(3, 20000, 14)]
    assert required_acks(acks, 4) == []
    assert required_acks(acks, 5) == [1]
    assert required_acks(acks, 13) == [1, 2]
    assert required_acks(acks, 14) == [1, 2, 3]


def test_clean_state():
    v = classify(XFS, Observation(0, 0, 0, ALL_FILES), WL, [1, 2, 3])
    assert v.verdict is Verdict.CLEAN and v.lost == []


def test_missing_acked_file_is_data_loss_even_when_fsck_is_clean():
    files = {WL.path(1): WL.content(1), WL.path(2): WL.content(2)}
    v = classify(XFS, Observation(0, 0, 0, files), WL, [1, 2, 3])
    assert v.verdict is Verdict.DATA_LOSS and [l.ack for l in v.lost] == [3]


def test_unacked_file_may_be_missing():
    files = {WL.path(1): WL.content(1)}
    assert classify(XFS, Observation(0, 0, 0, files), WL, [1]).verdict is Verdict.CLEAN


def test_fsck_damage_wins_over_data_loss_and_keeps_the_lost_acks():
    v = classify(XFS, Observation(0, 1, 0, None), WL, [1])
    assert v.verdict is Verdict.FS_CORRUPT and [l.ack for l in v.lost] == [1]


def test_failed_mount_is_unmountable():
    v = classify(XFS, Observation(255, 1, None, None, mount_error="mount: Structure needs cleaning"), WL, [1])
    assert v.verdict is Verdict.UNMOUNTABLE and "Structure needs cleaning" in v.reason


@pytest.mark.parametrize("fs, rc, meaning", [
    (XFS, 0, "clean"), (XFS, 1, "damage"), (XFS, 2, "damage"), (XFS, 127, "failed"),
    (EXT4, 0, "clean"), (EXT4, 4, "damage"), (EXT4, 12, "damage"), (EXT4, 8, "failed"), (EXT4, 127, "failed"),
])
def test_fsck_exit_codes(fs, rc, meaning):
    assert fs.fsck_meaning(rc) == meaning


def test_a_checker_that_failed_is_never_a_filesystem_verdict():
    assert classify(EXT4, Observation(0, 8, 0, ALL_FILES), WL, [1]).verdict is Verdict.INFRA_ERROR
    assert classify(XFS, Observation(-1, -1, infra_error="guest died"), WL, [1]).verdict is Verdict.INFRA_ERROR


def test_truncated_tar_yields_what_it_can():
    tar = tar_of({WL.path(i): WL.content(i) for i in (1, 2, 3)})
    files = files_of(tar[: len(tar) // 2])
    assert set(files) < {WL.path(i) for i in (1, 2, 3)}
    assert files_of(b"") == {} and files_of(None) == {}


def test_report_parsing():
    text = "mount_rc=0\ncollect_rc=0\numount_rc=0\nfsck_rc=1\n---fsck\nbad magic # in agf\n---mount\n---dmesg\nXFS: error\n"
    keys, sections = parse_report(text)
    obs = observation_from(keys, sections, {"pp/f": b"x"})
    assert (obs.mount_rc, obs.fsck_rc, obs.umount_rc, obs.files) == (0, 1, 0, {"pp/f": b"x"})
    assert obs.fsck_output == "bad magic # in agf" and obs.kernel_log == "XFS: error"
    assert observation_from(*parse_report("garbage\n"), None).infra_error


def run_fsck(fs, image) -> int:
    return subprocess.run([*fs.fsck.split(), str(image)], capture_output=True).returncode


def test_xfs_repair_flags_a_corrupted_image(tmp_path):
    img = tmp_path / "xfs.img"
    img.write_bytes(b"")
    subprocess.run(["truncate", "-s", "320M", str(img)], check=True)
    subprocess.run(XFS.mkfs_argv(str(img)), check=True)
    assert XFS.fsck_meaning(run_fsck(XFS, img)) == "clean"
    with open(img, "r+b") as f:
        f.seek(1024)  # AG 0's free-space header (AGF), sector 2
        f.write(b"XXXX")
    rc = run_fsck(XFS, img)
    assert XFS.fsck_meaning(rc) == "damage"
    assert classify(XFS, Observation(0, rc, 0, ALL_FILES), WL, [1, 2, 3]).verdict is Verdict.FS_CORRUPT


def test_e2fsck_flags_a_corrupted_image(tmp_path):
    img = tmp_path / "ext4.img"
    subprocess.run(["truncate", "-s", "32M", str(img)], check=True)
    subprocess.run(EXT4.mkfs_argv(str(img)), check=True)
    assert EXT4.fsck_meaning(run_fsck(EXT4, img)) == "clean"
    subprocess.run(["debugfs", "-w", "-R", "clri <2>", str(img)], check=True, capture_output=True)
    rc = run_fsck(EXT4, img)
    assert EXT4.fsck_meaning(rc) == "damage"
    assert classify(EXT4, Observation(0, rc, 0, ALL_FILES), WL, [1]).verdict is Verdict.FS_CORRUPT


def test_sha256sum_output_parses():
    text = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  pp/tree/d0001/f00001.c\n"
    assert sums_of(text) == {"pp/tree/d0001/f00001.c": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
    assert sums_of("garbage\n") == {}
