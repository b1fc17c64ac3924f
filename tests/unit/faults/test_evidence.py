"""Corrupted data: detected (checksum error, failed read, scrub errors) or returned as if good."""

from plugpull.faults.evidence import DETECTED, WRONG_DATA, corruption, scrub_errors
from plugpull.faults.told import Told

SCRUB = """scrub done for 0f0e
\tdata_extents_scrubbed: 3
\tcsum_errors: 2
\tverify_errors: 0
\tuncorrectable_errors: 2
"""
BTRFS_CSUM = "BTRFS warning (device dm-0): csum failed root 5 ino 257 off 0 csum 0x8941f998 expected csum 0x1"


def _told(*lines: str) -> Told:
    told = Told()
    for line in lines:
        told.add(line)
    return told


def test_scrub_errors_are_summed_and_none_is_zero():
    assert scrub_errors(SCRUB) == 4
    assert scrub_errors("scrub done\n\tcsum_errors: 0\n") == 0
    assert scrub_errors("") == 0


def test_a_checksum_error_or_a_failed_read_is_detected():
    found = corruption(_told("ack 1"), "boot\n" + BTRFS_CSUM)
    assert found.finding == DETECTED and "csum failed" in found.evidence
    assert corruption(_told("error 2 read 5"), "").finding == DETECTED
    assert corruption(_told(), "", SCRUB).evidence == "btrfs scrub: 4 errors"
    assert corruption(_told(), "", unreadable_after=True).finding == DETECTED


def test_wrong_data_outweighs_any_detection():
    found = corruption(_told("wrong 2 data 17"), BTRFS_CSUM, SCRUB)
    assert found.finding == WRONG_DATA and "2 data 17" in found.evidence
    assert corruption(_told(), BTRFS_CSUM, wrong_after=True).finding == WRONG_DATA


def test_no_sign_of_corruption_is_no_finding():
    found = corruption(_told("ack 1", "error 2 fsync 5"), "EXT4-fs (dm-0): mounted filesystem", "csum_errors: 0")
    assert (found.finding, found.evidence) == ("", "")


def test_the_cross_check_agrees_only_when_both_sides_match():
    from plugpull.faults.xfstests import CrossCheck, Side

    same = {"pp/f00001": b"a", "pp/f00002": b"b"}
    check = CrossCheck("ext4", "fsync-files", "acks:2", cut=40, acks_before=[1, 2],
                       flakey=Side(0, 0, dict(same), []), prefix=Side(0, 0, dict(same), []))
    assert check.differences == []
    check.prefix = Side(0, 4, {"pp/f00001": b"a"}, [2])
    assert check.differences == ["fsck rc: dm-flakey 0, prefix 4", "acks lost: dm-flakey [], prefix [2]",
                                 "1 files differ, first pp/f00002"]
    check.prefix, check.logged_after = Side(0, 0, dict(same), []), 3
    assert check.differences == ["3 write-log entries after the drop began"]
    assert check.to_json()["flakey"] == {"mount_rc": 0, "fsck_rc": 0, "files": 2, "lost": []}
