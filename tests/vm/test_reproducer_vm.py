"""The reproducers in guests, on the kernel under test (the host's by default): each of the
three btrfs findings FAILs on btrfs and PASSes on ext4 and xfs, in the sh form (`--run`) and
in the fstests form (its body run over a stand-in of the fstests helpers, its output compared
with its golden output). A workload that sets xattrs runs (setfattr and getfattr are in the
image) and its xattr is checked, one that preallocates has its extents checked (fiemap); a tool
the guest lacks is a harness failure.
On feature profiles: btrfs+compress=zstd shows the same finding, ext4+fast_commit PASSes.

suites/reproducers/, one run each: every live finding's sh script FAILs with the finding's
line, each workload's script on ext4 PASSes, and the fstests tests of the delay form and of the
XFS log hole, over the stand-in, print other than their golden output, with the finding in it.
The runs five times over on other kernels are `bench/reproducers.py` (docs/reproducer.md)."""

from pathlib import Path

import pytest

from plugpull import cli
from plugpull.errors import InfraError
from plugpull.guest.contract.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import create_disk
from plugpull.reproducer import case_for
from plugpull.reproducer.findings import LIVE
from plugpull.reproducer.flakey import fstests_test, golden
from plugpull.reproducer.inguest import DISK_MIB, GUEST_DISK, run_on
from plugpull.reproducer.flakey import script
from plugpull.reproducer.suite import DIR, sh_text
from plugpull.testbed.fs import FILESYSTEMS

pytestmark = pytest.mark.vm

SHIM = Path(__file__).parents[1] / "data" / "fstests-shim" / "common"
FINDINGS = {  # what btrfs on 6.1 shows after the power cut
    "gen:seq1-000253": "FAIL: A/bar: nlink is 2, owed 1 (sync-all, point 0)",
    "gen:seq2-056383": "FAIL: the file owed at A/foo is under none of A/foo B/bar (sync-all, point 0)",
    "gen:seq2-080435": "FAIL: A/bar: kind is absent, owed symlink (fsync-dir-entries, point 2)",
}
FSTESTS_LINES = {  # the same, as the fstests form prints it
    "gen:seq1-000253": "A/bar nlink (if a file): 2, owed 1 (sync-all, point 0)",
    "gen:seq2-056383": "the file owed at A/foo: under none of A/foo B/bar (sync-all, point 0)",
    "gen:seq2-080435": "A/bar kind: absent, owed symlink (fsync-dir-entries, point 2)",
}
SAYS = {  # each finding's first FAIL line starts so
    "f2fs-first-fsync": "FAIL: B/foo: size is 16384, owed 20480",
    "f2fs-strict-fdatasync": "FAIL: fdatasync B/foo returned and no cache flush reached",
    "btrfs-rename-both-names": "FAIL: A/bar: nlink is 2, owed 1",
    "btrfs-link-unlink": "FAIL: the file owed at A/foo is under none of A/foo B/bar",
    "btrfs-unlink-logged-dir": "FAIL: A/bar: nlink is 2, owed 1",
    "xfs-log-hole": "FAIL: XFS log recovery failed on a log whose only record lies 4036 blocks past a hole",
}
FSTESTS = {  # (fstests dir, test, FSTYP): a line its output has where the golden output has another
    "f2fs-first-fsync": ("f2fs", "900", "f2fs", "B/foo size (if a file): 16384, owed 20480 (fsync-data, point 1)"),
    "xfs-log-hole": ("xfs", "900", "xfs", "a record 4036 blocks past a hole: log recovery failed"),
}


@pytest.fixture(scope="module")
def guest(rig, tmp_path_factory):
    """One guest with a scratch disk for every script of this module (a boot is most of a
    script's time under TCG); each script makes its filesystem anew. `--run` boots its own."""
    work = tmp_path_factory.mktemp("reproducer-guest")
    disk = DiskSpec(create_disk(work / "sda.img", DISK_MIB), Bus.AHCI, True)
    console = work / "console.log"
    with rig.machine(MachineSpec(disks=(disk,)), console_log=console) as m:
        m.run("mkdir -p /tmp/fstests/common").check()
        for helper in SHIM.iterdir():
            m.write_file(f"/tmp/fstests/common/{helper.name}", helper.read_text())
        yield m, console


@pytest.mark.parametrize("fs", ["btrfs", "ext4", "xfs"])
@pytest.mark.parametrize("ident", FINDINGS)
def test_the_sh_reproducer(guest, ident, fs):
    m, console = guest
    outcome = run_on(m, script(case_for(ident, fs)), console)
    if fs == "btrfs":
        assert not outcome.passed and FINDINGS[ident] in outcome.lines, outcome.lines
    else:
        assert outcome.passed and outcome.lines == ("PASS",), outcome.lines


def test_run_exits_1_on_a_finding(capsys):
    assert cli.main(["reproducer", "gen:seq2-056383", "--fs", "btrfs", "--run"]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("FAIL: 1 owed fact(s) wrong")


XATTR = "gen:seq1-000345"  # setxattr A/foo, fsync A/foo
SETS = 'setfattr -n user.pp -v v1 "$mnt"/A/foo'


def test_an_xattr_workload_runs_and_is_checked(guest):
    """setfattr and getfattr are in the image: a workload that sets an xattr PASSes on ext4,
    and the same script with its setfattr left out FAILs on the xattr the point owes."""
    m, console = guest
    text = script(case_for(XATTR, "ext4"))
    assert SETS in text
    outcome = run_on(m, text, console)
    assert outcome.passed and outcome.lines == ("PASS",), outcome.lines
    outcome = run_on(m, text.replace(SETS, "true"), console)
    assert not outcome.passed and outcome.lines[0].startswith("FAIL: A/foo: xattr is none, owed v1"), outcome.lines


EXTENTS = "gen:seq5.eof-truncate-000206"  # btrfs/211's case: fsync, then the size moved into the blocks, fsync
NEXT = 'falloc -k 8192 8192'  # prealloc.next: blocks 2 and 3, which the last truncate takes in


@pytest.mark.parametrize("fs", ["btrfs", "ext4", "xfs"])
def test_an_extents_workload_is_checked(guest, fs):
    """The blocks fsync-extents owes are read back by fiemap: the image's kernel keeps them, in
    both forms; the script with prealloc.next's fallocate made one of block 0 (so blocks 2 and 3
    are a hole after the truncate) FAILs on the extents."""
    m, console = guest
    text = script(case_for(EXTENTS, fs))
    assert NEXT in text
    outcome = run_on(m, text, console)
    assert outcome.passed and outcome.lines == ("PASS",), outcome.lines
    assert run_fstests_form(m, EXTENTS, fs) == golden(case_for(EXTENTS, fs), "901")
    outcome = run_on(m, text.replace(NEXT, "falloc -k 0 4096"), console)
    assert not outcome.passed and outcome.lines[0] == "FAIL: A/foo: extents is blocks {0, 1}, owed blocks {0, 1, 2, " \
                                                      "3} (fsync-extents, point 3)", outcome.lines


def test_a_missing_tool_is_a_harness_failure(guest):
    m, console = guest
    text = script(case_for("gen:seq1-000253", "ext4"))
    assert " mktemp; do" in text
    with pytest.raises(InfraError, match="missing tool: pp-no-such-tool"):
        run_on(m, text.replace(" mktemp; do", " mktemp pp-no-such-tool; do"), console)


def run_fstests_form(m, ident: str, fs: str) -> str:
    m.write_file("/tmp/fstests/901", fstests_test(case_for(ident, fs), "901"), 0o755)
    done = m.run(f"cd /tmp/fstests && SCRATCH_DEV={GUEST_DISK} FSTYP=%s sh ./901", FILESYSTEMS[fs].mount_type,
                 timeout=900)
    assert done.rc == 0 and "not found" not in done.stderr.decode(errors="replace"), done.stderr
    return done.text


@pytest.mark.parametrize("fs", ["btrfs", "ext4", "xfs"])
@pytest.mark.parametrize("ident", FINDINGS)
def test_the_fstests_form(guest, ident, fs):
    out = run_fstests_form(guest[0], ident, fs)
    expected = golden(case_for(ident, fs), "901")
    if fs == "btrfs":
        assert out != expected and FSTESTS_LINES[ident] in out.splitlines(), out
    else:
        assert out == expected


@pytest.mark.parametrize("fs", ["btrfs+compress=zstd", "ext4+fast_commit"])
def test_a_profile_is_made_and_judged(guest, fs):
    """Both forms on a feature profile: btrfs's both-names finding shows with zstd as without
    (a seq-1 hunt of btrfs+compress=zstd failed the same workloads); ext4 with fast commits
    keeps what is owed. The fstests test passes its option's guard over the stand-in."""
    m, console = guest
    case = case_for("gen:seq1-000253", fs)
    outcome = run_on(m, script(case), console)
    out = run_fstests_form(m, "gen:seq1-000253", fs)
    if fs.startswith("btrfs"):
        assert not outcome.passed and FINDINGS["gen:seq1-000253"] in outcome.lines, outcome.lines
        assert FSTESTS_LINES["gen:seq1-000253"] in out.splitlines(), out
    else:
        assert outcome.passed and outcome.lines == ("PASS",), outcome.lines
        assert out == golden(case, "901")


@pytest.mark.parametrize("live", LIVE, ids=lambda live: live.name)
def test_each_live_finding_fails(guest, live):
    m, console = guest
    outcome = run_on(m, (DIR / f"{live.name}.sh").read_text(), console)
    assert not outcome.passed and outcome.lines[0].startswith(SAYS[live.name]), outcome.lines


@pytest.mark.parametrize("live", [live for live in LIVE if live.fs], ids=lambda live: live.name)
def test_its_workload_passes_on_ext4(guest, live):
    m, console = guest
    outcome = run_on(m, sh_text(live, "ext4"), console)
    assert outcome.passed and outcome.lines == ("PASS",), outcome.lines


@pytest.mark.parametrize("name", FSTESTS)
def test_the_fstests_form_shows_it_over_the_stand_in(guest, name):
    m, _ = guest
    where, number, fstyp, line = FSTESTS[name]
    m.write_file(f"/tmp/fstests/{number}", (DIR / "fstests" / where / number).read_text(), 0o755)
    done = m.run(f"cd /tmp/fstests && SCRATCH_DEV={GUEST_DISK} FSTYP=%s sh ./{number}", fstyp, timeout=900)
    golden = (DIR / "fstests" / where / f"{number}.out").read_text()
    assert done.rc == 0 and "not found" not in done.stderr.decode(errors="replace"), done.stderr
    assert done.text != golden and line in done.text.splitlines(), done.text
