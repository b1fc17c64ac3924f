"""The fstests root and the reading of `./check`'s results, without a guest: the exports
renumbered as the tree gets them, the cache key, local.config, and each result fstests can
leave (a pass, a failure with its diff, a test not run, none at all)."""

import shutil
from pathlib import Path

import pytest

from plugpull.errors import InfraError, UsageError
from plugpull.reproducer.fstests_guest import local_config, result_of
from plugpull.reproducer.fstests_root import EXPORTS, check_tree, exports, root_key
from plugpull.reproducer.suite import DIR as SUITE


@pytest.fixture
def tree(tmp_path) -> Path:
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "dmflakey").write_text("_init_flakey() { :; }\n")
    (tmp_path / "check").write_text("#!/bin/bash\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/master\n")
    return tmp_path


def test_every_export_is_renumbered_with_its_golden_output():
    made = exports()
    assert set(made) == {f"tests/{dest}" for dest in EXPORTS.values()}
    for name, (test, golden) in made.items():
        number = name.rsplit("/", 1)[1]
        assert golden.startswith(f"QA output created by {number}\n")
        assert f"# FS QA Test No. {number}\n" in test
    assert len({golden for _, golden in made.values()}) == len(made)


def test_an_export_whose_golden_output_names_another_test_is_refused(tmp_path):
    shutil.copytree(SUITE / "fstests", tmp_path / "fstests")
    (tmp_path / "fstests" / "btrfs" / "900.out").write_text("QA output created by 123\nA kind: dir\n")
    with pytest.raises(InfraError, match="900.out"):
        exports(tmp_path)


def test_the_key_follows_the_tree_and_not_its_git_dir(tree):
    key = root_key(tree)
    (tree / ".git" / "HEAD").write_text("ref: refs/heads/other\n")
    assert root_key(tree) == key
    (tree / "common" / "rc").write_text("_fail() { :; }\n")
    assert root_key(tree) != key


def test_the_key_follows_the_exports(tree, tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(SUITE / "fstests", suite / "fstests")
    key = root_key(tree, suite)
    with open(suite / "fstests" / "btrfs" / "901", "a") as f:
        f.write("# changed\n")
    assert root_key(tree, suite) != key


def test_a_directory_that_is_not_fstests_is_refused(tmp_path):
    with pytest.raises(UsageError, match="not an fstests tree"):
        check_tree(tmp_path)


def test_local_config_names_the_three_disks():
    text = local_config("btrfs", ["/dev/sdb", "/dev/sdc", "/dev/sdd"])
    assert "export FSTYP=btrfs\n" in text
    assert "export SCRATCH_DEV=/dev/sdc\n" in text and "export LOGWRITES_DEV=/dev/sdd\n" in text


def test_a_failure_gives_the_diff_against_the_golden_output():
    out = "generic/900 3s ... - output mismatch (see ...)\nFailures: generic/900\nFailed 1 of 1 tests\n"
    files = {"out": "QA output created by 900\nA/bar nlink: 1\n", "bad": "QA output created by 900\nA/bar nlink: 2\n"}
    result = result_of("generic/900", "btrfs", out, files, 3.0)
    assert result.status == "fail"
    assert "+A/bar nlink: 2" in result.diff_lines and "-A/bar nlink: 1" in result.diff_lines


def test_a_pass():
    result = result_of("generic/900", "ext4", "generic/900 2s ...  2s\nPassed all 1 tests\n", {}, 2.0)
    assert result.status == "pass" and result.diff_lines == []


def test_a_test_not_run_is_not_a_pass():
    out = "generic/903 [not run] this test requires a valid $LOGWRITES_DEV\nNot run: generic/903\nPassed all 1 tests\n"
    result = result_of("generic/903", "f2fs", out, {"notrun": "this test requires a valid $LOGWRITES_DEV\n"}, 1.0)
    assert result.status == "notrun" and "LOGWRITES_DEV" in result.reason


def test_a_filesystem_left_inconsistent_fails_with_no_output_mismatch():
    out = ("btrfs/231 12s ... _check_btrfs_filesystem: filesystem on /dev/sdc is inconsistent\n"
           "(see /opt/fstests/results//btrfs/231.full for details)\nFailures: btrfs/231\nFailed 1 of 1 tests\n")
    result = result_of("btrfs/231", "btrfs", out, {"out": "QA output created by 231\n"}, 12.0)
    assert result.status == "fail"
    assert result.diff_lines == ["_check_btrfs_filesystem: filesystem on /dev/sdc is inconsistent"]


def test_a_warning_in_dmesg_fails_with_its_first_lines():
    out = "generic/771 9s ... _check_dmesg: something found in dmesg (see ...)\nFailures: generic/771\n"
    dmesg = "run fstests generic/771\nBTRFS info (device sdc): using free space tree\nWARNING: CPU: 0 PID: 9 at fs/btrfs/tree-log.c:1\n"
    result = result_of("generic/771", "btrfs", out, {"dmesg": dmesg}, 9.0)
    assert result.status == "fail"
    assert result.diff_lines == ["_check_dmesg: something found in dmesg (see ...)",
                                 "WARNING: CPU: 0 PID: 9 at fs/btrfs/tree-log.c:1"]


def test_an_output_mismatch_keeps_check_s_own_findings_after_the_diff():
    out = "generic/900 3s ... [failed, exit status 1]- output mismatch (see ...)\nFailures: generic/900\n"
    files = {"out": "QA output created by 900\nok\n", "bad": "QA output created by 900\nmount failed\n"}
    result = result_of("generic/900", "btrfs", out, files, 3.0)
    assert "+mount failed" in result.diff_lines
    assert result.diff_lines[-1] == "[failed, exit status 1]"


@pytest.mark.parametrize("out", ["generic/900 unknown test, ignored\nPassed all 0 tests\n",
                                 "Failures: generic/900\n"])
def test_no_result_is_a_harness_failure(out):
    with pytest.raises(InfraError, match="generic/900"):
        result_of("generic/900", "btrfs", out, {}, 1.0)


def test_a_cached_root_is_marked_used_and_held_while_a_guest_runs_on_it(tree, tmp_path_factory, monkeypatch):
    import os
    import time
    import plugpull.reproducer.fstests_root as roots
    from plugpull.locks import held
    from plugpull.prune import last_use
    from plugpull.reproducer.fstests_guest import fstests_guest
    cache = tmp_path_factory.mktemp("cache")  # outside the tree, whose files make the key
    monkeypatch.setenv("PLUGPULL_CACHE", str(cache))
    monkeypatch.setattr(roots, "debootstrap", lambda *a: pytest.fail("a root was built, not found in the cache"))
    image = cache / "fstests-roots" / root_key(check_tree(tree)) / "root.img"
    image.parent.mkdir(parents=True)
    image.write_bytes(b"\0" * 512)
    for p in (image, image.parent):
        os.utime(p, (1, 1))
    assert roots.fstests_root(tree) == image and last_use(image.parent) > time.time() - 3600

    class Booted(Exception):
        pass

    class Rig:
        accel = "tcg"

        def machine(self, spec, **_):
            raise Booted(held(image.parent / ".lock"))

    with pytest.raises(Booted) as booted, fstests_guest(Rig(), image):
        pass
    assert booted.value.args == (True,) and not held(image.parent / ".lock")
