"""The step after recovery: a new name made in the mount that replayed the log (pp-check's
pp-tree --after, the `tree` collect's), its report read, and the `not-writable` verdict."""

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
PP_TREE_C = Path(__file__).parents[3] / "images" / "src" / "pp-tree.c"
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


@pytest.fixture(scope="module")
def pp_tree(tmp_path_factory) -> Path:
    """The guest's pp-tree, built for the host."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("needs cc on the host")
    out = tmp_path_factory.mktemp("bin") / "pp-tree"
    subprocess.run([cc, "-O2", "-Wall", "-o", str(out), str(PP_TREE_C)], check=True)
    return out


def after(pp_tree: Path, mnt: Path) -> tuple[str, str]:
    """pp-check's tree collect on a directory standing for the mount: the walk of mnt/pp (stdout)
    and the step after recovery's lines (descriptor 3)."""
    done = subprocess.run(["sh", "-c", 'exec "$0" -C "$1/pp" --after "$1" 3>&2 2>/dev/null', pp_tree, mnt],
                          capture_output=True, text=True)
    return done.stdout, done.stderr


def test_the_guest_step_makes_a_name_in_each_directory_and_says_when_one_fails(tmp_path, pp_tree):
    mnt = tmp_path / "mnt"
    (mnt / "pp" / "A" / "C").mkdir(parents=True)
    (mnt / "pp" / "B").mkdir()
    walked, made = after(pp_tree, mnt)
    assert made == "create_rc=0\n"
    assert sorted(line.split()[1] for line in walked.splitlines()) == ["A", "A/C", "B"]  # none of the new names
    made = sorted(str(p.relative_to(mnt)) for p in mnt.rglob("pp-new*"))
    assert made == ["pp-new", "pp-new-dir", "pp/A/C/pp-new", "pp/A/pp-new", "pp/B/pp-new", "pp/pp-new"]
    assert (mnt / "pp" / "B" / "pp-new").read_text() == "made after recovery\n"
    (mnt / "pp-new-dir").rmdir()
    (mnt / "pp" / "B" / "pp-new").unlink()
    (mnt / "pp" / "B" / "pp-new").mkdir()  # a name that cannot be made as a file
    obs = observation_from(*parse_report(f"mount_rc=0\n{after(pp_tree, mnt)[1]}fsck_rc=0\n"), None)
    assert "pp/B/pp-new: Is a directory" in obs.create_error
    assert classify(BTRFS, obs, WL, []).verdict is Verdict.NOT_WRITABLE


def test_a_new_directory_that_cannot_be_made_is_the_error_and_the_files_are_made_all_the_same(tmp_path, pp_tree):
    mnt = tmp_path / "mnt"
    (mnt / "pp" / "A").mkdir(parents=True)
    (mnt / "pp-new-dir").mkdir()  # taken: the step's last name cannot be made
    walked, made = after(pp_tree, mnt)
    assert made.startswith("create_rc=1\ncreate_error=") and "pp-new-dir: File exists" in made
    assert (mnt / "pp" / "A" / "pp-new").exists()  # the files are made all the same


def test_a_hunts_finding_names_a_state_not_writable_by_its_own_kind():
    kinds, names = state_damage(str(Verdict.NOT_WRITABLE), [], [])
    assert (kinds, names) == ({"create"}, set()) and "after recovery" in KIND_TEXT["create"]


def test_dir_and_root_may_be_relative(tmp_path, pp_tree):
    (tmp_path / "mnt" / "pp" / "A").mkdir(parents=True)
    made = subprocess.run(["sh", "-c", 'exec "$0" -C mnt/pp --after mnt 3>&1 >/dev/null', pp_tree], cwd=tmp_path,
                          capture_output=True, text=True)
    assert made.stdout == "create_rc=0\n"
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("pp-new*")) == \
        ["mnt/pp-new", "mnt/pp-new-dir", "mnt/pp/A/pp-new", "mnt/pp/pp-new"]


def test_a_step_that_cannot_report_fails(tmp_path, pp_tree):
    (tmp_path / "pp").mkdir()
    done = subprocess.run(["sh", "-c", 'exec 3>&-; exec "$0" -C "$1/pp" --after "$1"', pp_tree, tmp_path],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "descriptor 3" in done.stderr  # never taken as made
