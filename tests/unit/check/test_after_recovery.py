"""The step after recovery: a new name made in the mount that replayed the log (pp-check's
create_after, the `tree` collect's), its report read, and the `not-writable` verdict."""

import shutil
import subprocess
from pathlib import Path

import pytest

from plugpull.check.checker import observation_from, parse_report
from plugpull.check.verdict import Observation, Verdict, classify
from plugpull.hunt.findings import KIND_TEXT, state_damage
from plugpull.hunt.rules import rules_broken
from plugpull.testbed.fs import filesystem
from plugpull.testbed.workloads import FsyncFiles

BTRFS = filesystem("btrfs")
WL = FsyncFiles(count=1, seed=1)
CHECK_SH = Path(__file__).parents[3] / "images" / "check.sh"
EEXIST = "create_error=/usr/bin/pp-check: line 48: can't create /mnt/check/pp/pp-new: File exists"


def report(*create: str, fsck_rc: int = 0) -> Observation:
    text = "\n".join(["mount_rc=0", "collect_rc=0", *create, "umount_rc=0", f"fsck_rc={fsck_rc}", "---fsck", "---mount",
                      "---dmesg", ""])
    return observation_from(*parse_report(text), {WL.path(1): WL.content(1)})


def test_a_name_that_could_not_be_made_after_recovery_is_not_writable():
    obs = report("create_rc=1", EEXIST)
    assert obs.create_error.endswith("pp/pp-new: File exists")
    v = classify(BTRFS, obs, WL, [1])
    assert v.verdict is Verdict.NOT_WRITABLE and "File exists" in v.reason
    assert rules_broken(str(v.verdict), []) == ["create"]


def test_names_made_or_not_tried_are_no_verdict():
    assert classify(BTRFS, report("create_rc=0"), WL, [1]).verdict is Verdict.CLEAN
    assert classify(BTRFS, report(), WL, [1]).verdict is Verdict.CLEAN  # other collects make none
    assert report("create_rc=2").create_error  # a failure without its words is still one


def test_fsck_damage_is_worse_than_a_name_not_made_and_a_name_not_made_worse_than_a_loss():
    assert classify(BTRFS, report("create_rc=1", EEXIST, fsck_rc=1), WL, [1]).verdict is Verdict.FS_CORRUPT
    lost = Observation(0, 0, 0, {}, collect_rc="0", create_error="File exists")
    v = classify(BTRFS, lost, WL, [1])
    assert v.verdict is Verdict.NOT_WRITABLE and [l.ack for l in v.lost] == [1]


def create_after(mnt: Path, out: Path) -> str:
    """pp-check's create_after, run by busybox's sh on a directory standing for the mount."""
    body = CHECK_SH.read_text().split("\ncreate_after() {", 1)[1].split("\n}\n", 1)[0]
    script = f"mnt={mnt} sub=pp out={out}\ncreate_after() {{{body}\n}}\ncreate_after\n"
    return subprocess.run(["busybox", "sh", "-c", script], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox (the guest's shell) is not installed")
def test_the_guest_step_makes_a_name_in_each_directory_and_says_when_one_fails(tmp_path):
    mnt = tmp_path / "mnt"
    (mnt / "pp" / "A" / "C").mkdir(parents=True)
    (mnt / "pp" / "B").mkdir()
    out = create_after(mnt, tmp_path / "out")
    assert out == "create_rc=0\n"
    made = sorted(str(p.relative_to(mnt)) for p in mnt.rglob("pp-new*"))
    assert made == ["pp-new", "pp-new-dir", "pp/A/C/pp-new", "pp/A/pp-new", "pp/B/pp-new", "pp/pp-new"]
    assert (mnt / "pp" / "B" / "pp-new").read_text() == "made after recovery\n"
    (mnt / "pp-new-dir").rmdir()
    (mnt / "pp" / "B" / "pp-new").unlink()
    (mnt / "pp" / "B" / "pp-new").mkdir()  # a name that cannot be made as a file
    obs = observation_from(*parse_report(f"mount_rc=0\n{create_after(mnt, tmp_path / 'out')}fsck_rc=0\n"), None)
    assert "pp/B/pp-new: Is a directory" in obs.create_error
    assert classify(BTRFS, obs, WL, []).verdict is Verdict.NOT_WRITABLE


def test_a_hunts_finding_names_a_state_not_writable_by_its_own_kind():
    kinds, names = state_damage(str(Verdict.NOT_WRITABLE), [], [])
    assert (kinds, names) == ({"create"}, set()) and "after recovery" in KIND_TEXT["create"]
