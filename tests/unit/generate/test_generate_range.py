"""The fourth operation table: fallocate at the end of the file (keep-size, zero range with and
without keep-size), collapse and insert range. The ids the first three tables gave name the
same workloads, the new ones come after them and are pinned; collapse and insert are valid only
where the kernel takes them; the guest's and the reproducer's commands do on the host's own
filesystem what the model says; a filesystem that refuses an operation (EOPNOTSUPP) goes on
without it, and its model does too; and what fsync and fdatasync owe after each, with a
hand-worked state that lost it (data-loss) and one the filesystem may give (clean). No VM."""

import os
import shutil
import subprocess
import tempfile
from dataclasses import replace

import pytest
from tests.unit.generate.test_generate_later import host_tools, program_leaves_the_models_tree, reproducers_checks_pass  # noqa: F401

from plugpull import cli
from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.generate.judge import judge
from plugpull.generate.oracle import PROFILES, on_profile, owed, refusals
from plugpull.generate.ops import INITIAL_SIZE, RANGE_OPS, Op, up_to
from plugpull.generate.program import Tools, op_command, program
from plugpull.generate.space import Space, space_of, workload_of
from plugpull.generate.tree import BLOCK, digest, read_tree
from plugpull.generate.workload import generated_workload

# ids and what they named before the fourth table was added (read from the three tables' code)
THIRD_TABLE_IDS = {
    "seq1-000412": "rmdir A, sync",
    "seq1-000415": "rmdir B, fsync .",
    "seq2-167644": "creat A/foo; rmdir B, sync",
    "seq2-168060": "unlink A/foo; rmdir A, sync",
    "seq2-169437": "rmdir B, fsync .; rmdir A, fsync .",
    "seq3-58557564": "creat A/foo; creat A/bar; rmdir B, sync",
    "seq3-59028515": "rmdir B, fsync .; rmdir A, fsync .; mkdir B, fsync .",
}


@pytest.mark.parametrize("ident", list(THIRD_TABLE_IDS))
def test_the_third_tables_ids_name_the_same_workloads(ident):
    assert space_of(ident).parse(ident).text() == THIRD_TABLE_IDS[ident]
    assert workload_of(THIRD_TABLE_IDS[ident]).ident == ident


def test_the_range_workloads_come_after_the_three_tables_and_are_pinned():
    assert [op.text() for op in RANGE_OPS[:3]] == [
        "falloc-eof.keep-size A/foo", "falloc-eof.zero A/foo", "falloc-eof.zero-keep-size A/foo"]
    assert [op.text() for op in RANGE_OPS[12:14]] == ["collapse A/foo", "insert A/foo"] and len(RANGE_OPS) == 20
    assert Space(1).workload(416).text() == "falloc-eof.keep-size A/foo, sync"
    assert Space(1).workload(475).text() == "insert B/bar, fdatasync B/bar"
    assert Space(2).workload(169438).text() == "creat A/foo; falloc-eof.keep-size A/foo, sync"
    assert Space(3).workload(99018203).text() == ("insert B/bar, fdatasync B/bar; insert B/bar, fdatasync B/bar; "
                                                  "insert B/bar, fdatasync B/bar")
    assert workload_of("falloc-eof.zero-keep-size A/foo, fdatasync A/foo").ident == "seq1-000424"  # f2fs bug 9
    assert Space(2).locate(Space(2).workload(200000).steps) == 200000
    assert Space(3, ("collapse", "insert", "falloc-eof"), ("fsync",)).total() == 31984


def test_old_names_give_only_old_ids():
    """`--ops` without the fourth table's names is a filter of the three tables: the ids it gave."""
    old = Space(2, ("write", "falloc"), ("fsync",))
    listed = [w.index for w in old.workloads()]
    assert len(listed) == old.total() and max(listed) < 119036
    grown = [w.index for w in Space(2, ("write", "falloc", "collapse"), ("fsync",)).workloads()]
    assert set(listed) < set(grown) and min(set(grown) - set(listed)) >= 169438
    assert max(Space(2, *up_to(3)).sample(200, seed=4)) < 169438


@pytest.mark.parametrize("text", [
    "creat A/foo; collapse A/foo, sync",  # nothing after the range: EINVAL
    "truncate A/foo; insert A/foo, sync",  # the range starts past the end
    "creat A/foo; write.append A/foo; insert A/foo, sync",  # starts at the end
    "write.overwrite A/foo; collapse A/foo; collapse A/foo; collapse A/foo, sync",  # too many operations anyway
    "collapse A/foo; collapse A/foo; collapse A/foo, sync",  # 8192 left: the third takes the end
])
def test_collapse_or_insert_where_the_kernel_refuses_the_range_is_no_workload(text):
    with pytest.raises(UsageError):
        workload_of(text)


def test_the_model_of_each_operation():
    data = {text: workload_of(f"{text} A/foo, fsync A/foo").trees[-1].inode("A/foo").data for text in (
        "falloc-eof.keep-size", "falloc-eof.zero", "falloc-eof.zero-keep-size", "collapse", "insert")}
    old = b"A" * INITIAL_SIZE
    assert data["falloc-eof.keep-size"] == data["falloc-eof.zero-keep-size"] == old  # the size kept, nothing written
    assert data["falloc-eof.zero"] == old + bytes(BLOCK)
    assert data["collapse"] == old[:INITIAL_SIZE - BLOCK]
    assert data["insert"] == old[:BLOCK] + bytes(BLOCK) + old[BLOCK:]
    marked = workload_of("write.overwrite A/foo; collapse A/foo, sync").trees[-1].inode("A/foo").data
    assert marked == b"a" * BLOCK + b"A" * (INITIAL_SIZE - 2 * BLOCK)  # the second block is gone


def test_the_program_names_the_end_of_the_file_and_fails_on_any_word_from_xfs_io(capsys):
    text = program(workload_of("insert A/foo, fsync A/foo; falloc-eof.zero-keep-size A/foo, fdatasync A/foo"))
    assert f'xfs_io -c "finsert {BLOCK} {BLOCK}" A/foo' in text
    assert f'pp_said=$(xfs_io -c "fzero -k {INITIAL_SIZE + BLOCK} {BLOCK}" A/foo 2>&1) && [ -z "$pp_said" ]' in text
    assert "Operation not supported" not in text  # no filesystem refuses them by the ext4 profile
    assert cli.main(["generate", "--show", "seq1-000475", "--fs", "btrfs"]) == 0
    assert 'finsert 4096 4096" B/bar 2>&1) || :; case $pp_said in *"Operation not supported"*)' in capsys.readouterr().out
    assert cli.main(["generate", "--owed", "seq1-000475", "--fs", "btrfs"]) == 0
    assert "refused on btrfs (EOPNOTSUPP), so not done: insert" in capsys.readouterr().out


HOST = ["falloc-eof.zero-keep-size A/foo, fdatasync A/foo", "creat A/foo; falloc-eof.keep-size A/foo, fsync A/foo",
        "truncate A/foo; falloc-eof.zero A/foo, fsync A/foo",
        "write.overwrite A/foo; collapse A/foo, fsync A/foo; insert A/foo, fdatasync A/foo",
        "insert B/bar; collapse B/bar; rename.over B/bar A/foo, fsync A/foo"]


@pytest.mark.parametrize("synced", [True, False])
@pytest.mark.parametrize("text", HOST)
def test_the_guest_program_leaves_the_models_tree(host_tools, text, synced, tmp_path):
    program_leaves_the_models_tree(text, synced, tmp_path)


@pytest.mark.parametrize("text", HOST)
def test_the_reproducers_commands_leave_a_tree_its_checks_pass(host_tools, text, tmp_path):
    reproducers_checks_pass(text, tmp_path)


def run_in(directory, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["dash", "-c", 'dash -c "$1" 4>/dev/null', "sh", script], cwd=directory,
                          capture_output=True, text=True)


@pytest.fixture
def refusing_dir():
    """A directory on tmpfs, which refuses collapse and insert range (EOPNOTSUPP)."""
    if not shutil.which("xfs_io") or not shutil.which("dash") or not os.path.isdir("/dev/shm"):
        pytest.skip("needs xfs_io, dash and /dev/shm")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
        probe = subprocess.run(["xfs_io", "-f", "-c", "pwrite -q 0 16384", "-c", "fcollapse 4096 4096", f"{d}/probe"],
                               capture_output=True, text=True)
        if "Operation not supported" not in probe.stderr:
            pytest.skip("tmpfs here does not refuse collapse range")
        os.unlink(f"{d}/probe")
        yield d


def test_a_refused_operation_is_not_done_and_the_program_goes_on(refusing_dir):
    """On a filesystem that refuses collapse (btrfs's profile, tmpfs here), the program goes on
    without it, and leaves the tree of the model where the operation was not done."""
    workload = workload_of("write.overwrite A/foo; collapse A/foo, fsync A/foo; write.append A/foo, sync")
    refused = replace(workload, refused=frozenset({"collapse"}))
    done = run_in(refusing_dir, program(refused))
    assert done.returncode == 0, done.stderr
    seen = {p: (e.kind, e.size, e.digest) for p, e in read_tree(refusing_dir).items()}
    assert seen == {p: (e.kind, e.size, e.digest) for p, e in refused.trees[-1].view().items()}
    assert seen["A/foo"][1] == INITIAL_SIZE + BLOCK != len(workload.trees[-1].inode("A/foo").data)


def test_a_refusal_the_profile_does_not_expect_and_a_refused_operation_done_fail_the_program(refusing_dir, tmp_path):
    workload = workload_of("collapse A/foo, fsync A/foo")
    unexpected = run_in(refusing_dir, program(workload))  # tmpfs refuses what ext4's profile does
    assert unexpected.returncode != 0 and "Operation not supported" in unexpected.stderr
    (tmp_path / "work").mkdir()
    done = run_in(tmp_path / "work", program(replace(workload, refused=frozenset({"collapse"}))))
    assert done.returncode != 0 and "not refused" in done.stderr  # the host's filesystem did it


def test_btrfs_refuses_collapse_and_insert_and_no_other_profile_does():
    workload = workload_of("collapse A/foo, fsync A/foo; insert A/foo, fsync A/foo")
    assert on_profile(workload, "btrfs").refused == {"collapse", "insert"}
    assert all(on_profile(workload, fs).refused == frozenset() for fs in PROFILES if fs != "btrfs")
    assert on_profile(workload_of("falloc-eof.zero A/foo, sync"), "btrfs").refused == frozenset()


def final(text: str, fs: str = "ext4"):
    return on_profile(workload_of(text), fs).trees[-1].view()


def with_data(state: dict, path: str, data: bytes) -> dict:
    return {**state, path: replace(state[path], size=len(data), digest=digest(data))}


def verdict(text: str, fs: str, k, state) -> Verdict:
    return judge(workload_of(text), fs, k, state).verdict


OLD = b"A" * INITIAL_SIZE


@pytest.mark.parametrize("sync", ["fsync", "fdatasync"])
@pytest.mark.parametrize("variant", ["keep-size", "zero-keep-size"])
def test_a_keep_size_fallocate_past_the_end_owes_the_size_and_contents_unchanged(variant, sync):
    """fallocate(2): with FALLOC_FL_KEEP_SIZE "the file size will not be changed even if
    offset+len is greater than the file size"; the blocks past the end are allocated, not the
    file's. The point owes the size and contents as they were: a state whose size took the
    allocated range (CrashMonkey's f2fs bug 9: `fzero -k` past the end, fdatasync, the size
    wrong after recovery) is data-loss, on every profile."""
    text = f"falloc-eof.{variant} A/foo, {sync} A/foo"
    grown = with_data(final(text), "A/foo", OLD + bytes(BLOCK))
    for fs in PROFILES:
        assert verdict(text, fs, 1, final(text)) == Verdict.CLEAN
        found = judge(workload_of(text), fs, 1, grown)
        assert found.verdict == Verdict.DATA_LOSS and f"size is {INITIAL_SIZE + BLOCK}" in found.reason
    assert verdict(text, "posix", 0, grown) == Verdict.CLEAN  # posix: the setup's sync owes nothing


def test_a_keep_size_fallocate_changes_nothing_owed_even_before_its_point():
    """It never changes the size or the contents, so what the setup's sync owed stays owed
    while it runs (no write that may be torn)."""
    text = "falloc-eof.keep-size A/foo; write.append A/bar, fsync A/bar"
    grown = with_data(final(text), "A/foo", OLD + bytes(2 * BLOCK))
    assert verdict(text, "ext4", 1, grown) == Verdict.DATA_LOSS
    assert verdict(text, "ext4", 1, final(text)) == Verdict.CLEAN
    zeroed = "falloc-eof.zero A/foo; write.append A/bar, fsync A/bar"
    assert verdict(zeroed, "ext4", 1, with_data(final(zeroed), "A/foo", OLD)) == Verdict.CLEAN  # may be torn


@pytest.mark.parametrize("text, lost", [
    ("falloc-eof.zero A/foo, fsync A/foo", OLD),  # the size it gave lost
    ("collapse A/foo, fdatasync A/foo", OLD),  # not collapsed
    ("collapse A/foo, fsync A/foo", OLD[:BLOCK] + bytes(BLOCK) + OLD[2 * BLOCK:]),  # a hole where the range went
    ("insert A/foo, fsync A/foo", OLD),  # not inserted
    ("insert A/foo, fdatasync A/foo", OLD + bytes(BLOCK)),  # the size, not the shift
])
def test_fsync_and_fdatasync_owe_the_size_and_contents_each_operation_left(text, lost):
    """POSIX fsync() and fdatasync(): the file's data and what is needed to read it back (the
    size); collapse and insert range move the data after the range (fallocate(2))."""
    for fs in ("posix", "ext4", "xfs", "f2fs"):
        assert verdict(text, fs, 1, final(text, fs)) == Verdict.CLEAN
        assert verdict(text, fs, 1, with_data(final(text, fs), "A/foo", lost)) == Verdict.DATA_LOSS
        assert verdict(text, fs, 0, with_data(final(text, fs), "A/foo", lost)) == Verdict.CLEAN  # not yet owed


def test_on_btrfs_a_refused_collapse_owes_the_file_as_it_was():
    """btrfs refuses collapse and insert (EOPNOTSUPP): the program goes on without them, and a
    point after one owes the file unchanged. A state that shows it collapsed is data-loss there."""
    text = "collapse A/foo, fsync A/foo"
    as_was, collapsed = final(text, "btrfs"), final(text, "ext4")
    assert as_was["A/foo"].size == INITIAL_SIZE and collapsed["A/foo"].size == INITIAL_SIZE - BLOCK
    assert verdict(text, "btrfs", 1, as_was) == Verdict.CLEAN
    assert verdict(text, "btrfs", 1, collapsed) == Verdict.DATA_LOSS
    assert verdict(text, "ext4", 1, as_was) == Verdict.DATA_LOSS
    assert {(o.path, o.name): o.values for o in owed(workload_of(text), "btrfs", 1)}[("A/foo", "size")] == {
        INITIAL_SIZE}


F2FS_COMPRESS_REFUSES = ["falloc.punch-hole A/foo, fsync A/foo", "falloc.zero-range A/foo, fsync A/foo",
                         "falloc-eof.zero A/foo, fsync A/foo", "falloc-eof.zero-keep-size A/foo, fsync A/foo",
                         "collapse A/foo, fsync A/foo", "insert A/foo, fsync A/foo"]
F2FS_COMPRESS_DOES = ["falloc.default A/foo, fsync A/foo", "falloc.keep-size A/foo, fsync A/foo",
                      "falloc-eof.keep-size A/foo, fsync A/foo"]


@pytest.mark.parametrize("fs", ["f2fs+compress", "f2fs-strict+compress"])
def test_f2fs_with_compression_refuses_by_mode_not_by_family(fs):
    """f2fs_fallocate on a compressed file: punch hole, collapse, zero range and insert range
    are EOPNOTSUPP; plain and keep-size allocation are done. f2fs without the option refuses
    none of them, and btrfs's refusals hold on its feature profiles too."""
    for text in F2FS_COMPRESS_REFUSES:
        workload = workload_of(text)
        run = on_profile(workload, fs)
        assert len(run.refused) == 1 and run.refuses(workload.steps[0].op), text
        assert run.trees[-1].inode("A/foo").data == b"A" * INITIAL_SIZE, text
        assert on_profile(workload, "f2fs").refused == frozenset(), text
    assert all(on_profile(workload_of(t), fs).refused == frozenset() for t in F2FS_COMPRESS_DOES)
    assert refusals("btrfs+compress=zstd") == refusals("btrfs") == {"collapse", "insert"}
    assert refusals("f2fs") == refusals("ext4+fast_commit") == {"reflink", "self-clone", "clone-hole.clone", "snapshot",
                                                                 "quota", "xattrs"}
    # the clones, btrfs's snapshots and quotas, 2,000 xattrs on one file
    assert refusals("posix") == frozenset()


def test_a_refused_zero_range_owes_the_file_as_it_was_and_a_zeroed_one_is_data_loss():
    """The 12 false failures of f2fs+compress's seq-1 hunt: fzero refused, the zeros owed."""
    text = "falloc.zero-range A/foo, fsync A/foo"
    run = on_profile(workload_of(text), "f2fs+compress")
    owes = {(o.path, o.name): o.values for o in owed(run, "f2fs", 1)}
    assert owes[("A/foo", "digest")] == {digest(OLD)}
    zeroed = workload_of(text).trees[-1].view()
    assert judge(run, "f2fs", 1, zeroed).verdict == Verdict.DATA_LOSS
    assert judge(run, "f2fs", 1, run.trees[-1].view()).verdict == Verdict.CLEAN
    assert judge(workload_of(text), "f2fs", 1, run.trees[-1].view()).verdict == Verdict.DATA_LOSS  # f2fs zeroes it
    assert 'fzero 4096 8192" A/foo 2>&1) || :; case $pp_said in *"Operation not supported"*)' in program(run)


def fake_xfs_io(tmp_path, said: str) -> Tools:
    """An xfs_io that prints `said` and exits 0, as xfsprogs' fzero does on EOPNOTSUPP."""
    path = tmp_path / "xfs_io"
    path.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 0\n")
    path.chmod(0o755)
    return Tools(xfs_io=str(path))


@pytest.mark.parametrize("variant", ["default", "keep-size", "punch-hole", "zero-range"])
def test_the_first_tables_fallocate_fails_on_anything_xfs_io_prints_unless_refused(variant, tmp_path):
    op = Op("falloc", variant, ("A/foo",))
    before = workload_of(f"falloc.{variant} A/foo, sync").trees[0]
    refusing = fake_xfs_io(tmp_path, "fallocate: Operation not supported")
    assert sh(op_command(op, 1, before, refusing)) != 0  # not expected: a failure
    assert sh(op_command(op, 1, before, refusing, refused=True)) == 0
    silent = fake_xfs_io(tmp_path, "")
    assert sh(op_command(op, 1, before, silent)) == 0
    assert sh(op_command(op, 1, before, silent, refused=True)) != 0  # done where it was refused


def sh(command: str) -> int:
    return subprocess.run(["sh", "-c", command], capture_output=True).returncode


def test_a_hunt_of_f2fs_with_compression_runs_the_zero_range_refused_and_judges_it_by_f2fs_rules():
    workload = generated_workload("gen:seq1-000080", "f2fs+compress")  # falloc.zero-range A/foo, fsync A/foo
    assert (workload.profile, workload.fs) == ("f2fs", "f2fs+compress")
    assert 'case $pp_said in *"Operation not supported"*)' in workload.program()
    assert "Operation not supported" not in generated_workload("gen:seq1-000080", "f2fs").program()
