"""F2FS as a filesystem under test: its row (mkfs, fsck and what fsck's exit codes mean, the
nobarrier option, the smallest disk), the oracle's f2fs profile, the host's fsck.f2fs on a
good and a damaged image, and in a guest, a small crash run with barriers judged clean."""

import json
import shutil
import subprocess

import pytest

from plugpull.check import hostfsck
from plugpull.check.verdict import Verdict
from plugpull.cli import main
from plugpull.errors import UsageError
from plugpull.generate.judge import judge
from plugpull.generate.oracle import PROFILES, rules_for
from plugpull.generate.space import workload_of
from plugpull.hunt.hunter import HuntSpec
from plugpull.reproducer import case_for
from plugpull.reproducer.flakey import fstests_test, script as sh_script
from plugpull.testbed.fs import filesystem, mode

F2FS = filesystem("f2fs")
needs_tools = pytest.mark.skipif(not shutil.which("mkfs.f2fs") or not shutil.which("fsck.f2fs"),
                                 reason="f2fs-tools is not installed")


def test_the_row_formats_checks_read_only_and_mounts_as_f2fs():
    assert F2FS.mkfs_argv("/dev/x") == ["mkfs.f2fs", "-q", "-f", "/dev/x"]
    assert F2FS.fsck == "fsck.f2fs --dry-run" and F2FS.mount_type == "f2fs"
    assert mode("nobarrier").mount_options(F2FS) == ["nobarrier"]
    assert mode("nobarrier").guest_setup(F2FS, "sda") == []
    assert hostfsck.COMMANDS["f2fs"] == F2FS.fsck.split()


@pytest.mark.parametrize("rc, meaning", [
    (0, "clean"), (1, "damage"), (4, "damage"), (8, "failed"), (16, "failed"), (255, "failed"), (12, "failed"),
])
def test_fsck_f2fs_exit_codes(rc, meaning):
    """1: damage it would have corrected (--dry-run writes nothing), 4: left uncorrected;
    8 is its operational error and 255 its -1 (it could not open or read the image)."""
    assert F2FS.fsck_meaning(rc) == meaning


def test_a_disk_below_52_mib_is_refused_and_64_is_taken():
    """52 MiB is mkfs.f2fs's smallest, under the 64 MiB every command takes at least, so
    `--disk-mib 64` (hunt's default for f2fs) is accepted."""
    with pytest.raises(UsageError, match="--disk-mib 51: mkfs.f2fs needs a disk of at least 52 MiB"):
        F2FS.check_size(51)
    F2FS.check_size(52)
    F2FS.check_size(64)
    assert HuntSpec(1, fs="f2fs").mib == 64


@needs_tools
def test_mkfs_f2fs_refuses_a_disk_under_the_rows_minimum(tmp_path):
    """The figure in the row, measured again: 51 MiB is refused, 52 formats."""
    for mib, ok in ((F2FS.min_mib - 1, False), (F2FS.min_mib, True)):
        img = tmp_path / f"{mib}.img"
        with open(img, "wb") as f:
            f.truncate(mib << 20)
        assert (subprocess.run(F2FS.mkfs_argv(str(img)), capture_output=True).returncode == 0) is ok, mib


@needs_tools
def test_the_hosts_fsck_f2fs_passes_a_new_image_and_flags_a_damaged_one(tmp_path):
    img = tmp_path / "f2fs.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(F2FS.mkfs_argv(str(img)), check=True, capture_output=True)
    rc, _ = hostfsck.run("f2fs", img, timeout=60)
    assert F2FS.fsck_meaning(rc) == "clean"
    with open(img, "r+b") as f:
        f.seek(6 << 20)  # the segment information table of a 64 MiB image (sit_blkaddr 1536)
        f.write(bytes(range(256)) * 4096)
    rc, output = hostfsck.run("f2fs", img, timeout=60)
    assert F2FS.fsck_meaning(rc) == "damage", (rc, output[-400:])
    assert b"Invalid SIT" in output


@needs_tools
def test_unreachable_inodes_are_damage_not_a_failure(tmp_path):
    """A NAT overwritten (64 MiB image: nat_blkaddr 2560, at 10 MiB) leaves nodes no entry
    reaches: fsck.f2fs asks whether to restore them; answered "n" it exits 4, damage."""
    img = tmp_path / "f2fs.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(F2FS.mkfs_argv(str(img)), check=True, capture_output=True)
    with open(img, "r+b") as f:
        f.seek(10 << 20)
        f.write(bytes(range(1, 256)) * 4112)
    rc, output = hostfsck.run("f2fs", img, timeout=60)
    assert b"restore lost files" in output
    assert F2FS.fsck_meaning(rc) == "damage", (rc, output[-400:])


def test_the_f2fs_profile_owes_what_the_linux_profiles_owe_but_ext4s_own_rule():
    assert "f2fs" in PROFILES
    names = {r.name for r in rules_for("f2fs")}
    assert names == {r.name for r in rules_for("xfs")}
    assert "ext4-replace-via-rename" not in names and "sync-all" in names


@pytest.mark.parametrize("text, lost", [
    ("creat A/foo, fsync A/foo", "fsync-names"),
    ("creat A/foo, fsync A", "fsync-dir-entries"),
    ("setxattr A/foo, fsync A/foo", "fsync-xattrs"),
    ("write.overwrite A/foo, fdatasync A/foo", "fdatasync-data"),
])
def test_the_f2fs_profile_flags_a_state_that_lost_what_the_point_owed(text, lost):
    workload = workload_of(text)
    found = judge(workload, "f2fs", 1, workload.trees[0].view())
    assert found.verdict == Verdict.DATA_LOSS
    assert any(f"({lost}, point 1)" in why for _, why in found.lost), found.lost
    assert judge(workload, "f2fs", 1, workload.trees[-1].view()).verdict == Verdict.CLEAN


def test_f2fs_strict_is_f2fs_mounted_with_the_strict_fsync_mode_and_judged_by_f2fs_rules():
    strict = filesystem("f2fs-strict")
    assert strict.mkfs == F2FS.mkfs and strict.fsck == F2FS.fsck and strict.mount_type == "f2fs"
    assert strict.mount_options == ("fsync_mode=strict",) and F2FS.mount_options == ()
    assert (strict.rules, F2FS.rules, filesystem("xfs-2008").rules) == ("f2fs", "f2fs", "xfs-2008")
    script = sh_script(case_for("gen:seq3-24232848", "f2fs-strict"))
    assert script.count('mount -t f2fs -o fsync_mode=strict "/dev/mapper/$name"') == 2
    assert "-o fsync_mode" not in sh_script(case_for("gen:seq3-24232848", "f2fs"))
    assert 'MOUNT_OPTIONS="$MOUNT_OPTIONS -o fsync_mode=strict"' in fstests_test(case_for("gen:seq3-24232848",
                                                                                          "f2fs-strict"))


def test_the_reproducer_takes_f2fs():
    case = case_for("gen:seq1-000253", "f2fs")
    assert case.fs == "f2fs" and "on f2fs" in case.title()
    with pytest.raises(UsageError, match="f2fs"):
        case_for("gen:seq1-000253", "f2fs-2008")


@pytest.mark.vm
def test_a_small_f2fs_crash_run_with_barriers_is_clean(tmp_path, image, accel):
    if not shutil.which("mkfs.f2fs"):
        pytest.skip("f2fs-tools is not installed (make deps installs it)")
    if "f2fs" in image.manifest.get("modules_skipped", ()):
        pytest.skip(f"the guest kernel {image.kernel_release} has no f2fs module")
    report = tmp_path / "run.json"
    rc = main(["crash", "--accel", str(accel), "--fs", "f2fs", "--mode", "barrier", "--disk-mib", "64",
               "--workload", "fsync-files", "--states", "3", "--seed", "1", "--out", str(tmp_path / "out"),
               "--json", str(report)])
    states = json.loads(report.read_text())["states"]
    assert rc == 0 and states, states
    assert sum(s["acks_required"] for s in states) > 0, "no state owed an ack"
    assert [(s["cut"], s["verdict"], s["reason"]) for s in states if s["verdict"] != "clean"] == []
