"""Reproducers on feature profiles, without a guest: ext4+fast_commit and btrfs+compress=zstd
made and mounted with their options in every form, the header naming the profile and what it
needs; a system that cannot make or mount the profile is refused (exit 2), a control that fails
is no verdict (exit 3); the fstests form calls fstests' guard of each option; bad profiles
are refused as everywhere else."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from plugpull.guest.image.build import KernelSource
from plugpull.reproducer import case_for
from plugpull.reproducer.delay import fstests_test as delay_test, script as delay_script
from plugpull.reproducer.flakey import FLAKEY, fstests_test, script
from plugpull.reproducer.flushes import fstests_test as flushes_test, script as flushes_script
from plugpull.reproducer.profiles import NEEDS
from plugpull.reproducer.sh import make_and_mount
from plugpull.reproducer.shell import PRELUDE
from plugpull.testbed.features import FEATURES
from tests.unit.reproducer.test_reproducer import SHIM, helpers_called, helpers_defined, parses
from tests.unit.reproducer.test_reproducer_cli import run

FAST = case_for("gen:seq1-000253", "ext4+fast_commit")
ZSTD = case_for("gen:seq1-000253", "btrfs+compress=zstd")
FAST_SYSFS = "/sys/fs/ext4/features/fast_commit"


def lines(text: str) -> list[str]:
    return text.splitlines()


def test_the_profile_is_judged_by_its_base_rules():
    assert (FAST.rules, ZSTD.rules) == ("ext4", "btrfs")
    assert case_for("gen:seq1-000051", "f2fs-strict+compress").rules == "f2fs"


def test_ext4_fast_commit_is_made_with_the_feature_after_the_control():
    text = lines(script(FAST))
    control = text.index('mkfs.ext4 -q -F "$dev" >/dev/null || die "mkfs of ext4 failed"')
    assert text[control + 1] == 'mount -t ext4 "$dev" "$mnt" || die "mount of ext4 failed"'
    check = text.index(f'[ -e {FAST_SYSFS} ] || unsupported "this kernel has no ext4 fast_commit ({FAST_SYSFS})"')
    made = text.index('mkfs.ext4 -q -F -O fast_commit "$dev" >/dev/null || unsupported "mkfs.ext4 -O fast_commit '
                      'failed: it cannot make ext4+fast_commit"')
    mounted = text.index('mount -t ext4 "/dev/mapper/$name" "$mnt" || unsupported "the kernel did not mount '
                         'ext4+fast_commit (see dmesg)"')
    assert control < check < made < mounted
    assert "# Profile ext4+fast_commit: ext4 with these options, each needing what it says:" in text
    assert "#   fast_commit: mkfs -O fast_commit; Linux 5.10 on" in text


def test_btrfs_zstd_mounts_with_the_option_every_time():
    text = lines(script(ZSTD))
    assert text.count('mkfs.btrfs -q -f "$dev" >/dev/null || die "mkfs failed"') == 1  # no mkfs option: no refusal
    assert 'mount -t btrfs -o compress=zstd "/dev/mapper/$name" "$mnt" || unsupported "the kernel did not mount ' \
           'btrfs+compress=zstd (see dmesg)"' in text
    assert 'if ! mount -t btrfs -o compress=zstd "/dev/mapper/$name" "$mnt"; then' in text  # the recovery mount
    assert "#   compress=zstd: mount -o compress=zstd; Linux 4.14 on" in text
    assert any("/sys/fs/btrfs/features/compress_zstd" in line for line in text)


def test_a_plain_filesystem_has_no_control():
    text = script(case_for("gen:seq1-000253", "ext4"))
    assert "unsupported" not in text and "# Profile" not in text and "control" not in text


@pytest.mark.parametrize("case", [FAST, ZSTD], ids=["fast_commit", "zstd"])
def test_every_form_parses(case, tmp_path):
    for text in (script(case), delay_script(case), flushes_script(case)):
        assert parses("dash", text, tmp_path)
    for text in (fstests_test(case, "901"), delay_test(case, "901"), flushes_test(case, "901")):
        assert parses("bash", text, tmp_path)


def test_the_flushes_form_makes_the_profile_on_the_device():
    text = lines(flushes_script(FAST))
    assert 'mkfs.ext4 -q -F -O fast_commit "$dev" >/dev/null || unsupported "mkfs.ext4 -O fast_commit failed: it ' \
           'cannot make ext4+fast_commit"' in text
    assert 'mount -t ext4 "$dev" "$mnt" || unsupported "the kernel did not mount ext4+fast_commit (see dmesg)"' in text
    assert '_log_writes_mkfs -O fast_commit >> $seqres.full 2>&1 || _fail "mkfs failed"' in flushes_test(FAST)


def stub(where: Path, name: str, body: str) -> None:
    (where / name).write_text(f"#!/bin/sh\n{body}\n")
    (where / name).chmod(0o755)


def making(case, tmp_path: Path, refuse: str = "", sysfs: bool = True):
    """The script's making and first mount, over stub programs: mkfs and mount exit 1 when
    their arguments hold `refuse` (`*`: always); `sysfs`: the kernel's feature files there."""
    bin_dir, sysfs_dir = tmp_path / "bin", tmp_path / "sysfs"
    bin_dir.mkdir()
    sysfs_dir.mkdir()
    fails = 'case "$*" in *%s*) exit 1;; esac' % refuse if refuse else ":"
    for name in ("mkfs.ext4", "mkfs.btrfs", "mount"):
        stub(bin_dir, name, fails)
    for name, body in {"dmsetup": ":", "blockdev": "echo 2048", "umount": ":"}.items():
        stub(bin_dir, name, body)
    for need in NEEDS.values():
        if need.sysfs and sysfs:
            (sysfs_dir / Path(need.sysfs).name).touch()
    text = "\n".join(["dev=/dev/fake", PRELUDE, *make_and_mount(case, FLAKEY), "echo MADE"])
    for need in NEEDS.values():
        if need.sysfs:
            text = text.replace(need.sysfs, str(sysfs_dir / Path(need.sysfs).name))
    return subprocess.run(["dash", "-c", text], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)})


def test_a_system_that_makes_the_profile_goes_on(tmp_path):
    done = making(FAST, tmp_path)
    assert (done.returncode, done.stdout) == (0, "MADE\n"), done.stderr


@pytest.mark.parametrize("case, refuse, sysfs, said", [
    (FAST, "", False, "unsupported: this kernel has no ext4 fast_commit"),
    (FAST, "fast_commit", True, "unsupported: mkfs.ext4 -O fast_commit failed"),
    (ZSTD, "compress=zstd", True, "unsupported: the kernel did not mount btrfs+compress=zstd"),
], ids=["no sysfs file", "mkfs without the feature", "kernel without the option"])
def test_a_system_without_the_profile_is_refused(case, refuse, sysfs, said, tmp_path):
    done = making(case, tmp_path, refuse, sysfs)
    assert done.returncode == 2 and done.stdout == "" and said in done.stderr, done.stderr


@pytest.mark.parametrize("case", [FAST, ZSTD, case_for("gen:seq1-000253", "btrfs")], ids=["fast", "zstd", "plain"])
def test_a_failing_control_or_plain_mkfs_gives_no_verdict(case, tmp_path):
    done = making(case, tmp_path, refuse="-q")
    assert done.returncode == 3 and "ERROR: mkfs" in done.stderr and "unsupported" not in done.stderr, done.stderr


def test_the_fstests_form_guards_and_makes_the_profile():
    fast = lines(fstests_test(FAST, "901"))
    assert '[ "$FSTYP" = "ext4" ] || _notrun "a test of ext4+fast_commit: FSTYP=ext4 only"' in fast
    assert "_require_scratch_ext4_feature fast_commit" in fast
    assert fast.index("_require_scratch_ext4_feature fast_commit") < fast.index(
        '_scratch_mkfs -O fast_commit >>$seqres.full 2>&1 || _fail "mkfs failed"')
    zstd = lines(fstests_test(ZSTD, "901"))
    assert "_require_btrfs_fs_feature compress_zstd" in zstd
    assert 'MOUNT_OPTIONS="$MOUNT_OPTIONS -o compress=zstd"' in zstd
    assert '_scratch_mkfs >>$seqres.full 2>&1 || _fail "mkfs failed"' in zstd
    assert "_require_btrfs_fs_feature" not in fstests_test(case_for("gen:seq1-000253", "btrfs"), "901")


def test_every_option_has_its_needs_and_every_guard_is_a_stand_in_helper():
    assert set(NEEDS) == set(FEATURES)
    shim = helpers_defined(SHIM / "common")
    assert {n.guard.split()[0] for n in NEEDS.values() if n.guard} <= shim


PROFILES = ("ext4+fast_commit", "ext4+data=journal", "ext4+inline_data", "btrfs+compress=zstd", "btrfs+nodatacow",
            "f2fs+compress")


@pytest.mark.parametrize("fs", PROFILES)
def test_each_profile_calls_only_helpers_of_the_stand_in(fs):
    case = case_for("gen:seq1-000253", fs)
    for text in (fstests_test(case, "901"), delay_test(case, "901"), flushes_test(case, "901")):
        assert helpers_called(text) <= helpers_defined(SHIM / "common"), helpers_called(text)


def test_a_stand_in_guard_skips_what_the_kernel_lacks(tmp_path):
    done = subprocess.run(["bash", "-c", '. common/preamble; seq=901; _require_btrfs_fs_feature no_such_feature; '
                                         'echo ran'], cwd=SHIM, capture_output=True, text=True)
    assert "ran" not in done.stdout and "901 not run: the kernel's btrfs has no no_such_feature" in done.stderr


def test_the_command_writes_a_profile_script(capsys):
    code, out, err = run(["gen:seq1-000253", "--fs", "ext4+fast_commit"], capsys)
    assert code == 0 and out == script(FAST)


@pytest.mark.parametrize("fs, said", [("ext4+nope", "unknown option 'nope'"), ("xfs+fast_commit", "not of xfs"),
                                      ("ext3+fast_commit", "expected one of"),
                                      ("btrfs+nodatacow+compress=zstd", "write it 'btrfs+compress=zstd+nodatacow'")])
def test_a_bad_profile_exits_2_in_one_line(fs, said, capsys):
    code, out, err = run(["gen:seq1-000253", "--fs", fs], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and said in err, err


def a_state(where: Path, fs: str) -> Path:
    where.mkdir()
    (where / "state.json").write_text(json.dumps({"fs": fs, "workload": "gen:seq1-000253", "acks_required": 2,
                                                  "model": "prefix"}))
    return where


def test_a_profile_hunts_state_names_its_profile(tmp_path, capsys):
    code, out, _ = run([str(a_state(tmp_path / "s", "btrfs+compress=zstd"))], capsys)
    assert code == 0 and out == script(ZSTD)
    code, out, err = run([str(a_state(tmp_path / "bad", "btrfs+nope"))], capsys)
    assert code == 2 and out == "" and "its fs is 'btrfs+nope'" in err and len(err.splitlines()) == 1, err


def test_run_refuses_a_profile_the_kernel_lacks_before_booting(tmp_path, capsys, monkeypatch):
    import plugpull.kernels
    old = tmp_path / "lib" / "modules" / "5.4.0-old"
    old.mkdir(parents=True)
    monkeypatch.setattr(plugpull.kernels, "kernel_option", lambda kernel, modules: KernelSource(tmp_path / "bz", old))
    code, out, err = run(["gen:seq1-000253", "--fs", "ext4+fast_commit", "--run", "--kernel", "debian:5.4",
                          "--out", str(tmp_path / "repro.sh")], capsys)
    assert code == 2 and "fast_commit needs Linux 5.10" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "repro.sh").exists()
