"""The later operations (direct-I/O writes, mmap writes, msync) and the unsynced setup: the ids
the first table gave name the same workloads as before, the new ones are pinned; the guest's
commands do on the host's own filesystem what the model says; the oracle owes what fsync,
fdatasync and msync(MS_SYNC) promise after them, and a hand-worked state that lost it is
data-loss. No VM."""

import os
import shutil
import subprocess
from dataclasses import replace

import pytest

from plugpull import cli
from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.generate.judge import judge
from plugpull.generate.oracle import PROFILES, owed
from plugpull.generate.ops import INITIAL_SIZE, TRUNCATE_TO
from plugpull.generate.program import program
from plugpull.generate.space import Space, space_of, workload_of
from plugpull.generate.tree import BLOCK, FILE, digest, read_tree
from plugpull.reproducer import case_for
from plugpull.reproducer.sh import TOOLS as SH_TOOLS, checking
from plugpull.reproducer.steps import op_lines, setup_lines

# ids and what they named before the later operations were added (read from the first table's code)
OLD_IDS = {
    "seq1-000000": "creat A/foo, sync",
    "seq1-000253": "rename.file A/bar B/bar, fsync B",
    "seq1-000355": "setxattr B/bar, fdatasync B/bar",
    "seq2-000253": "creat A/foo; rename.over A/bar A/foo, sync",
    "seq2-014532": "write.overwrite A/bar, fsync A/bar; link A/foo B/foo, fsync A",
    "seq2-119035": "setxattr B/bar, fdatasync B/bar; removexattr B/bar, fdatasync B/bar",
    "seq3-1040581": "creat B/foo; rename.over B/bar B/foo, fsync B/foo; rename.over B/foo A/foo, sync",
    "seq3-10108865": "falloc.default A/bar, fdatasync A/bar; link B/bar B/foo, fsync B; write.unaligned A/foo, sync",
    "seq3-33156267": "setxattr B/bar, fdatasync B/bar; removexattr B/bar, fdatasync B/bar; setxattr B/bar, "
                     "fdatasync B/bar",
}


@pytest.mark.parametrize("ident", list(OLD_IDS))
def test_the_first_tables_ids_name_the_same_workloads(ident):
    assert space_of(ident).parse(ident).text() == OLD_IDS[ident]
    assert workload_of(OLD_IDS[ident]).ident == ident


def test_the_later_workloads_come_after_the_first_tables_and_are_pinned():
    space = Space(1)
    assert space.workload(356).text() == "dwrite.overwrite A/foo, sync"
    assert space.workload(411).text() == "mmapwrite.extend B/bar, msync B/bar"
    later = Space(1, ("dwrite", "mmapwrite"), ("msync", "fsync"))
    assert later.total() == 24 and [w.index for w in later.workloads()][:3] == [357, 360, 363]
    assert Space(2, ("dwrite", "mmapwrite", "write"), ("msync", "fdatasync")).total() == 2880  # as a plain walk counts
    assert workload_of("mmapwrite.extend A/foo, msync A/foo; dwrite.append A/foo, fsync A/foo").ident == "seq2-156612"
    assert Space(2).locate(Space(2).workload(150000).steps) == 150000


def test_an_mmap_write_over_a_page_past_the_end_or_a_stray_msync_is_no_workload():
    with pytest.raises(UsageError):
        workload_of("creat A/foo; mmapwrite.overwrite A/foo, msync A/foo")  # no page of the file to write
    with pytest.raises(UsageError):
        workload_of("write.append A/foo, msync A/foo")  # msync follows only an mmap write


def test_the_guest_program_does_msync_in_the_mmap_writes_process():
    text = program(workload_of("mmapwrite.extend A/foo, msync A/foo"))
    extend = f"{INITIAL_SIZE + BLOCK}"
    assert (f'xfs_io -c "truncate {extend}" -c "mmap -w 0 {extend}" -c "mwrite -S 0x61 {INITIAL_SIZE} {BLOCK}" '
            f'-c "msync -s 0 {extend}" A/foo\n# point 1: msync A/foo, done by the command above\npp_acked 1') in text
    direct = program(workload_of("truncate A/foo; dwrite.append A/foo, fdatasync A/foo"))
    assert f'xfs_io -d -c "pwrite -q -S 0x62 {BLOCK} {BLOCK}" A/foo\nsync -d A/foo  # point 1' in direct
    assert "msync" not in program(workload_of("mmapwrite.overwrite A/foo, fsync A/foo")).split("# 1:")[1]


LATER = ["mmapwrite.extend A/foo, msync A/foo; dwrite.append A/foo, fsync A/foo",
         "truncate A/foo; dwrite.append A/foo, fdatasync A/foo",
         "creat A/foo; mmapwrite.extend A/foo, msync A/foo",
         "mmapwrite.overwrite B/bar; rename.over B/bar A/foo, fsync A/foo"]


@pytest.fixture
def host_tools():
    if not shutil.which("xfs_io") or not shutil.which("dash"):
        pytest.skip("needs xfs_io and dash on the host")


def program_leaves_the_models_tree(text: str, synced: bool, tmp_path) -> None:
    """The workload's guest program, run by dash on the host's filesystem in an empty
    directory (O_DIRECT must work there), leaves the model's last tree."""
    program_leaves_its_tree(workload_of(text, synced), tmp_path)


def program_leaves_its_tree(workload, tmp_path) -> None:
    """`program_leaves_the_models_tree` for a workload made otherwise (a shape's, unnumbered)."""
    (tmp_path / "prog.sh").write_text(program(workload))
    (tmp_path / "work").mkdir()
    done = subprocess.run(["dash", "-c", 'dash "$1" 4>/dev/null', "sh", str(tmp_path / "prog.sh")],
                          cwd=tmp_path / "work", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    seen = {p: (e.kind, e.size, e.digest) for p, e in read_tree(tmp_path / "work").items()}
    assert seen == {p: (e.kind, e.size, e.digest) for p, e in workload.trees[-1].view().items()}


def reproducers_checks_pass(text: str, tmp_path) -> None:
    """The reproducer's setup and operations, run by dash under `tmp_path`, leave a tree its
    checks pass."""
    case = case_for(f"gen:{workload_of(text).ident}", "ext4")
    env = {**os.environ, "mnt": str(tmp_path)}
    ran = subprocess.run(["dash", "-ec", "\n".join(setup_lines(case, SH_TOOLS) + op_lines(case, SH_TOOLS)), "sh"],
                         env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    checked = subprocess.run(["dash", "-c", f"failed=0\n{checking(case)}", "sh"], env=env, capture_output=True, text=True)
    assert (checked.returncode, checked.stdout) == (0, "PASS\n"), checked.stderr


@pytest.mark.parametrize("synced", [True, False])
@pytest.mark.parametrize("text", LATER)
def test_the_guest_program_leaves_the_models_tree(host_tools, text, synced, tmp_path):
    program_leaves_the_models_tree(text, synced, tmp_path)


@pytest.mark.parametrize("text", LATER)
def test_the_reproducers_commands_leave_a_tree_its_checks_pass(host_tools, text, tmp_path):
    reproducers_checks_pass(text, tmp_path)


def final(text: str, synced: bool = True):
    return workload_of(text, synced).trees[-1].view()


def verdict(text: str, fs: str, k, state, synced: bool = True) -> Verdict:
    return judge(workload_of(text, synced), fs, k, state).verdict


def with_data(state: dict, path: str, data: bytes) -> dict:
    return {**state, path: replace(state[path], size=len(data), digest=digest(data))}


@pytest.mark.parametrize("fs", PROFILES)
def test_a_state_missing_an_msynced_range_is_data_loss(fs):
    text = "mmapwrite.extend A/foo, msync A/foo"
    old = b"A" * INITIAL_SIZE
    assert verdict(text, fs, 1, final(text)) == Verdict.CLEAN
    assert verdict(text, fs, 1, with_data(final(text), "A/foo", old)) == Verdict.DATA_LOSS  # the extension lost
    zeros = with_data(final(text), "A/foo", old + bytes(BLOCK))  # the ftruncate durable, the data not
    assert verdict(text, fs, 1, zeros) == Verdict.DATA_LOSS
    assert verdict(text, fs, 0, zeros) == Verdict.CLEAN  # not yet owed
    over = "mmapwrite.overwrite A/foo, msync A/foo"
    assert verdict(over, fs, 1, with_data(final(over), "A/foo", old)) == Verdict.DATA_LOSS
    torn = with_data(final(over), "A/foo", b"a" * 2048 + b"A" * (INITIAL_SIZE - 2048))
    assert verdict(over, fs, 1, torn) == Verdict.DATA_LOSS


def test_msync_owes_the_data_and_on_linux_a_new_files_name():
    text = "creat A/foo; mmapwrite.extend A/foo, msync A/foo"
    found = {(o.path, o.name): o.rule for o in owed(workload_of(text), "xfs", 1)}
    assert found == {**{(p, n): "sync-all" for p, n in found if found[(p, n)] == "sync-all"},
                     ("A/foo", "size"): "msync-data", ("A/foo", "digest"): "msync-data",
                     ("A/foo", "kind"): "msync-new-name"}
    gone = {p: e for p, e in final(text).items() if p != "A/foo"}
    assert verdict(text, "ext4", 1, gone) == Verdict.DATA_LOSS
    assert verdict(text, "posix", 1, gone) == Verdict.CLEAN  # POSIX's msync owes no name


@pytest.mark.parametrize("sync", ["fsync", "fdatasync"])
@pytest.mark.parametrize("op", ["dwrite.overwrite", "dwrite.append", "mmapwrite.overwrite", "mmapwrite.extend"])
def test_fsync_and_fdatasync_owe_a_direct_or_mmap_write_like_a_buffered_one(op, sync):
    text = f"{op} A/foo, {sync} A/foo"
    for fs in PROFILES:
        assert verdict(text, fs, 1, final(text)) == Verdict.CLEAN
        assert verdict(text, fs, 1, with_data(final(text), "A/foo", b"A" * INITIAL_SIZE)) == Verdict.DATA_LOSS


def test_a_direct_write_alone_owes_nothing():
    """O_DIRECT without O_SYNC does not promise the data or the size (open(2))."""
    text = "dwrite.append A/foo; write.append A/bar, fsync A/bar"
    old = with_data(final(text), "A/foo", b"A" * INITIAL_SIZE)
    assert all(verdict(text, fs, 1, old) == Verdict.CLEAN for fs in PROFILES)
    appended = workload_of("truncate A/foo; dwrite.append A/foo, fsync A/foo").trees[-1].inode("A/foo").data
    assert appended == b"A" * TRUNCATE_TO + bytes(BLOCK - TRUNCATE_TO) + b"b" * BLOCK  # at the next aligned offset


def test_an_unsynced_setup_owes_nothing_at_ack_0_and_its_files_are_new():
    text = "write.append A/foo, fdatasync A/foo"
    synced, unsynced = workload_of(text), workload_of(text, synced=False)
    assert unsynced.ident == synced.ident.replace("-", "u-") and unsynced.steps == synced.steps
    assert owed(unsynced, "ext4", 0) == [] and owed(synced, "ext4", 0) != []
    assert verdict(text, "ext4", 0, {}, synced=False) == Verdict.CLEAN
    assert verdict(text, "ext4", 0, {}) == Verdict.DATA_LOSS  # the setup's sync owed its files
    names = {(o.path, o.name): o.rule for o in owed(unsynced, "btrfs", 1)}
    assert names[("A/foo", "kind")] == "fdatasync-new-name"  # created in the workload's own transaction
    assert ("A/foo", "kind") not in {(o.path, o.name) for o in owed(synced, "btrfs", 1) if o.point == 1}
    assert verdict(text, "btrfs", 1, {}, synced=False) == Verdict.DATA_LOSS
    script = program(unsynced)
    assert "sync\npp_acked 0" not in script and "pp_acked 0" in script
    assert "sync\npp_acked 0" in program(synced)


def test_an_id_says_its_setup_and_the_cli_keeps_to_it(capsys):
    assert space_of("seq1u-000012").parse("seq1u-000012").synced is False
    with pytest.raises(UsageError):
        Space(1).parse("seq1u-000012")
    assert cli.main(["generate", "--seq", "1", "--setup", "unsynced", "--ops", "msync", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 8 and all(line.startswith("seq1u-") for line in listed)
    assert cli.main(["generate", "--show", "seq1u-000411"]) == 0
    assert "not synced" in capsys.readouterr().out
    assert cli.main(["generate", "--show", "seq1u-000411", "--setup", "synced"]) == 2
    assert "not of --setup synced" in capsys.readouterr().err
