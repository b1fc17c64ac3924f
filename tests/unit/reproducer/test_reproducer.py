"""The reproducer's scripts, without a guest: they parse in dash, busybox sh and bash; their
operations, run on the host's own filesystem (no crash: nothing is lost), leave a tree the
checks pass; a tree that lost what the point owes fails them, with the fact named; the
fstests form prints its golden output on that tree. The command line: `test_reproducer_cli`."""

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from plugpull.errors import InfraError
from plugpull.reproducer import case_for, flushes, loghole
from plugpull.reproducer.checks import checks
from plugpull.reproducer.delay import fstests_test as delay_test
from plugpull.reproducer.flakey import FLAKEY_MOUNT, fstests_test, script
from plugpull.reproducer.fstests import TOOLS as FSTESTS_TOOLS, golden, printing
from plugpull.reproducer.inguest import verdict_of
from plugpull.reproducer.sh import TOOLS as SH_TOOLS, checking
from plugpull.reproducer.steps import op_lines, setup_lines

FINDINGS = ("gen:seq1-000253", "gen:seq2-056383", "gen:seq2-080435")


def parses(shell: str, text: str, tmp_path: Path) -> bool:
    path = tmp_path / "script"
    path.write_text(text)
    return subprocess.run([*shell.split(), "-n", str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("ident", [*FINDINGS, "gen:seq1-000345", "gen:seq2-000412"])
@pytest.mark.parametrize("fs", ["ext4", "xfs", "btrfs"])
def test_the_scripts_parse(ident, fs, tmp_path):
    case = case_for(ident, fs)
    shells = [s for s in ("dash", "busybox sh", "sh") if shutil.which(s.split()[0])]
    assert shells and all(parses(s, script(case), tmp_path) for s in shells)
    assert parses("bash", fstests_test(case, "999"), tmp_path)
    assert not parses("dash", script(case) + "if then fi\n", tmp_path)


def test_the_checks_are_what_the_point_owes():
    found = checks(case_for("gen:seq1-000253", "btrfs"))
    facts = {(c.path, c.fact): c.allowed for c in found.facts}
    assert facts[("B/bar", "kind")] == ("file",)
    assert facts[("A/bar", "kind")] == ("absent", "file")  # the setup's sync owed it; the rename may undo it
    assert facts[("A/bar", "nlink")] == ("1",)
    assert ("B/bar", "md5") not in facts  # fsync of B owes B's entries, not the file's data
    assert not any(c.fact == "xattr" for c in found.facts)  # no operation sets one
    [held] = found.held
    assert held.names == ("A/bar", "B/bar")
    assert held.md5 == hashlib.md5(b"B" * 16384).hexdigest()


def test_a_cut_workload_owes_what_its_point_makes_durable():
    """Point 1 of seq2-080435 (the symlink's directory fsynced): the rename after it is not
    run, so A/foo is owed as a symlink to bar and A/bar as absent."""
    facts = {(c.path, c.fact): c.allowed for c in checks(case_for("gen:seq2-080435", "btrfs", 1)).facts}
    assert facts[("A/foo", "kind")] == ("symlink",)
    assert facts[("A/foo", "target")] == ("bar",)
    assert facts[("A/bar", "kind")] == ("absent",)


def test_xattrs_are_checked_where_the_workload_sets_them():
    found = checks(case_for("gen:seq1-000345", "ext4"))  # setxattr A/foo, fsync A/foo
    assert ("A/foo", "xattr", ("v1",)) in {(c.path, c.fact, c.allowed) for c in found.facts}
    assert found.needs_getfattr and "setfattr" in script(case_for("gen:seq1-000345", "ext4"))


@pytest.fixture
def host_tools():
    if not shutil.which("xfs_io") or not shutil.which("dash"):
        pytest.skip("needs xfs_io and dash on the host")


def run_ops(case, where: Path) -> None:
    """The script's setup and operations, on the host, in `where` (no flakey device, no crash)."""
    lines = setup_lines(case, SH_TOOLS) + op_lines(case, SH_TOOLS)
    done = subprocess.run(["dash", "-ec", "\n".join(lines), "sh"], env={**os.environ, "mnt": str(where)},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def run_checks(case, where: Path):
    return subprocess.run(["dash", "-c", f"failed=0\n{checking(case)}", "sh"], env={**os.environ, "mnt": str(where)},
                          capture_output=True, text=True)


@pytest.mark.parametrize("ident", [*FINDINGS, "gen:seq2-000412", "gen:seq2-030000"])
@pytest.mark.parametrize("fs", ["ext4", "btrfs"])
def test_a_tree_with_nothing_lost_passes(host_tools, ident, fs, tmp_path):
    case = case_for(ident, fs)
    run_ops(case, tmp_path)
    done = run_checks(case, tmp_path)
    assert (done.returncode, done.stdout) == (0, "PASS\n"), done.stderr


def test_a_second_name_left_behind_fails(host_tools, tmp_path):
    """seq1-000253 as btrfs left it: the renamed file under its old name too."""
    case = case_for("gen:seq1-000253", "btrfs")
    run_ops(case, tmp_path)
    os.link(tmp_path / "B/bar", tmp_path / "A/bar")
    done = run_checks(case, tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "FAIL: A/bar: nlink is 2, owed 1 (sync-all, point 0)",
        "FAIL: A/bar and B/bar are one inode (link count 2), which no step of the workload makes them",
        "FAIL: 2 owed fact(s) wrong after a crash right after point 1 of gen:seq1-000253 on btrfs"]


def test_two_names_of_one_inode_fail_where_no_link_count_is_owed(host_tools, tmp_path):
    """seq2-084739 as btrfs+compress=zstd left it in a hunt: after rename A/foo B/foo, fdatasync
    B/foo, rename B/foo A/bar, fsync A, the file under A/bar and B/foo, though no step gives
    both and no point owes either name's link count (7.3.4 FAILs this, the fixed build PASSes)."""
    case = case_for("gen:seq2-084739", "btrfs")
    run_ops(case, tmp_path)
    assert run_checks(case, tmp_path).returncode == 0
    os.link(tmp_path / "A/bar", tmp_path / "B/foo")
    done = run_checks(case, tmp_path)
    assert done.returncode == 1
    assert "FAIL: A/bar and B/foo are one inode (link count 2), which no step of the workload makes them" \
        in done.stdout.splitlines()


def test_names_a_step_links_are_not_kept_apart(host_tools, tmp_path):
    """link A/foo A/bar makes the two one inode: no check says they must not be."""
    case = case_for("gen:seq1-000131", "ext4")
    assert checks(case).apart == ()  # A/foo and A/bar, the workload's only files, are linked
    run_ops(case, tmp_path)
    done = run_checks(case, tmp_path)
    assert (done.returncode, done.stdout) == (0, "PASS\n")


def test_a_file_under_neither_name_fails(host_tools, tmp_path):
    case = case_for("gen:seq2-056383", "btrfs")
    run_ops(case, tmp_path)
    (tmp_path / "B/bar").unlink()
    done = run_checks(case, tmp_path)
    assert done.returncode == 1
    assert "FAIL: the file owed at A/foo is under none of A/foo B/bar (sync-all, point 0)" in done.stdout


@pytest.mark.parametrize("damage", ["contents", "rename undone"])
def test_wrong_contents_or_names_fail(host_tools, damage, tmp_path):
    case = case_for("gen:seq2-080435", "xfs")  # symlink A/foo, fsync A; rename A/foo A/bar, fsync A
    run_ops(case, tmp_path)
    if damage == "rename undone":
        os.rename(tmp_path / "A/bar", tmp_path / "A/foo")
        expected = "FAIL: A/foo: kind is symlink, owed absent (fsync-dir-entries, point 2)"
    else:
        os.unlink(tmp_path / "A/bar")
        os.symlink("elsewhere", tmp_path / "A/bar")
        expected = "FAIL: A/bar: target is elsewhere, owed bar (fsync-dir-entries, point 2)"
    done = run_checks(case, tmp_path)
    assert done.returncode == 1 and expected in done.stdout.splitlines()


def test_lost_data_fails(host_tools, tmp_path):
    case = case_for("gen:seq1-000026", "ext4")
    assert case.whole.text() == "write.overwrite A/foo, fsync A/foo"
    run_ops(case, tmp_path)
    (tmp_path / "A/foo").write_bytes(b"A" * 16384)  # the overwrite lost
    done = run_checks(case, tmp_path)
    assert done.returncode == 1 and "FAIL: A/foo: md5 is " in done.stdout


def print_facts(case, where: Path) -> str:
    lines = setup_lines(case, FSTESTS_TOOLS) + op_lines(case, FSTESTS_TOOLS)
    env = {**os.environ, "SCRATCH_MNT": str(where), "XFS_IO_PROG": "xfs_io", "GETFATTR_PROG": "getfattr"}
    done = subprocess.run(["bash", "-ec", "\n".join(lines) + "\n" + printing(case), "sh"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return "QA output created by 999\n" + done.stdout


@pytest.mark.parametrize("ident", [*FINDINGS, "gen:seq2-000412"])
def test_the_fstests_form_prints_its_golden_output(host_tools, ident, tmp_path):
    case = case_for(ident, "xfs")
    assert print_facts(case, tmp_path) == golden(case, "999")


def test_the_fstests_form_shows_a_lost_fact(host_tools, tmp_path):
    case = case_for("gen:seq1-000253", "btrfs")
    (tmp_path / "mnt").mkdir()
    run_ops(case, tmp_path / "mnt")
    os.link(tmp_path / "mnt/B/bar", tmp_path / "mnt/A/bar")
    env = {**os.environ, "SCRATCH_MNT": str(tmp_path / "mnt")}
    out = subprocess.run(["bash", "-c", printing(case)], env=env, capture_output=True, text=True).stdout
    assert "A/bar nlink (if a file): 2, owed 1 (sync-all, point 0)" in out.splitlines()
    assert "A/bar and B/bar: one inode, which no step of the workload makes them" in out.splitlines()
    assert "QA output created by 999\n" + out != golden(case, "999")


SHIM = Path(__file__).parents[2] / "data" / "fstests-shim"
CALL = re.compile(r"(?:^|[;&|]\s*|\bthen\s+|\belse\s+)\s*(_[a-z0-9_]+)\b", re.M)


def helpers_defined(where: Path) -> set[str]:
    """The functions the files of `where` define (`name()` at a line's start)."""
    return {m for f in where.iterdir() if f.is_file() for m in re.findall(r"^(_[a-z0-9_]+)\(\)", f.read_text(), re.M)}


def helpers_called(text: str) -> set[str]:
    """The fstests helpers a test calls, the old tree's branch of its mount left out."""
    return set(CALL.findall(text.replace(FLAKEY_MOUNT, ""))) - set(re.findall(r"^(_?[a-z0-9_]+)\(\)", text, re.M))


def every_fstests_form(ident: str, fs: str) -> list[str]:
    """The fstests tests of `ident` on `fs` in every form, and the XFS log hole's."""
    case = case_for(ident, fs)
    return [fstests_test(case, "901"), delay_test(case, "901"), flushes.fstests_test(case, "901"),
            loghole.fstests_test("901")]


@pytest.mark.parametrize("ident", [*FINDINGS, "gen:seq1-000345"])
@pytest.mark.parametrize("fs", ["btrfs", "f2fs-strict"])
def test_the_fstests_form_calls_only_helpers_of_todays_fstests(ident, fs):
    flakey, *others = every_fstests_form(ident, fs)
    assert {"_begin_fstest", "_init_flakey", "_flakey_drop_and_remount", "_scratch_mkfs"} <= helpers_called(flakey)
    for text in (flakey, *others):
        called = helpers_called(text)
        assert called <= helpers_defined(SHIM / "common"), called - helpers_defined(SHIM / "common")
    assert not {"_mount_flakey", "_unmount_flakey"} & helpers_defined(SHIM / "common")


def fake_fstests(tmp_path: Path, mount_rc: int, today: bool = True) -> dict:
    """The stand-in's helpers with stub programs (no disk, no dm): every step works but
    `mount`, which exits `mount_rc`; `today` False: the tree before eb2ad950."""
    root = tmp_path / "fstests"
    shutil.copytree(SHIM, root)
    (root / "common" / "preamble").write_text((root / "common/preamble").read_text() + "_require_scratch() { :; }\n")
    if not today:
        flakey = (root / "common/dmflakey").read_text().replace("NON_FLAKEY_DEV=$SCRATCH_DEV", "old=$SCRATCH_DEV")
        (root / "common/dmflakey").write_text(flakey + "_mount_flakey() { mount; }\n_unmount_flakey() { :; }\n")
    stubs = root / "bin"
    stubs.mkdir()
    for name, body in {"dmsetup": '[ "$1" != targets ] || echo "flakey v1"', "blockdev": "echo 1048576", "modprobe": ":", "mkfs.xfs": ":",
                       "mount": f"exit {mount_rc}", "umount": ":"}.items():
        (stubs / name).write_text(f"#!/bin/sh\n{body}\n")
        (stubs / name).chmod(0o755)
    (tmp_path / "mnt").mkdir()
    return {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "SCRATCH_DEV": "/dev/fake", "FSTYP": "xfs",
            "SCRATCH_MNT": str(tmp_path / "mnt"), "RESULT_DIR": str(tmp_path)}


@pytest.mark.parametrize("today", [True, False])
def test_a_mount_that_fails_stops_the_fstests_form(host_tools, today, tmp_path):
    env = fake_fstests(tmp_path, mount_rc=1, today=today)
    (tmp_path / "fstests" / "901").write_text(fstests_test(case_for("gen:seq1-000253", "xfs"), "901"))
    done = subprocess.run(["bash", "./901"], cwd=tmp_path / "fstests", env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] in ("mount /dev/mapper/flakey-test.901 failed", "mounting the flakey device failed")
    assert list((tmp_path / "mnt").iterdir()) == []  # the workload did not run elsewhere


def test_a_helper_todays_fstests_lacks_stops_the_test(host_tools, tmp_path):
    env = fake_fstests(tmp_path, mount_rc=0)
    text = fstests_test(case_for("gen:seq1-000253", "xfs"), "901").replace("\nmount_flakey\n", "\n_mount_flakey\n")
    (tmp_path / "fstests" / "901").write_text(text)
    done = subprocess.run(["bash", "./901"], cwd=tmp_path / "fstests", env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "_mount_flakey: command not found" in done.stderr
    assert list((tmp_path / "mnt").iterdir()) == []


def test_the_verdict_line_is_read():
    assert verdict_of(0, "PASS\n", "").passed
    failed = verdict_of(1, "FAIL: A/bar: nlink is 2\nFAIL: 1 owed fact(s) wrong\n", "")
    assert not failed.passed and len(failed.lines) == 2
    for rc, out, err in [(2, "", "missing tool: setfattr"), (3, "", "ERROR: mkfs failed"), (0, "", ""),
                         (1, "PASS\n", ""), (137, "FAIL: x\n", "")]:
        with pytest.raises(InfraError):
            verdict_of(rc, out, err)


def test_a_kernel_failure_is_a_fail_verdict():
    console = "[   12.5] BTRFS info (device dm-0): start tree-log replay\n[   12.6] kernel BUG at fs/btrfs/tree-log.c:1234!\n"
    for rc, out in [(0, "PASS\n"), (3, ""), (-1, "")]:
        outcome = verdict_of(rc, out, "", console)
        assert not outcome.passed and outcome.lines == ("FAIL: the guest kernel bug: kernel BUG at fs/btrfs/tree-log.c:1234!",)
    assert verdict_of(0, "PASS\n", "", "[ 1.0] BTRFS info (device dm-0): using crc32c\n").passed
