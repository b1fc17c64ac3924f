"""The sixteenth operation table: btrfs/231's clone of a hole past the end of a file at 1/8 of its
sizes (`clone-hole.ranges`, `.truncate`, `.clone` of A/foo) and a quota enable as a step
(`quota.enable`, btrfs/166's), and the shape that holds 231. The ids the first fourteen tables
gave name the same workloads (digests of the fourteen tables' code, seq 1 whole and a sample of
seq 2); the new ones come after them; the file each step leaves is worked out by hand, the check
is shown to catch 231's stale range after its last fsync, and a model whose clone copies stale
data is shown to fail it. No VM."""

import random

import pytest
from tests.unit.generate.pins import seq1_pin, seq2_drawn_pin
from tests.unit.generate.test_generate_later import host_tools  # noqa: F401
from tests.unit.generate.test_generate_names import state, unnumbered
from tests.unit.generate.test_generate_reach import refused_on_the_host
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean

from plugpull.check.verdict import Verdict
from plugpull.generate import clonehole, ops
from plugpull.generate.judge import judge
from plugpull.generate.oracle import on_profile, refusals
from plugpull.generate.ops import Persist, up_to
from plugpull.generate.points import persistence_choices
from plugpull.generate.program import program
from plugpull.generate.setups import quota_line
from plugpull.generate.shapes import shape_named
from plugpull.generate.space import Space, workload_of
from plugpull.generate.tree import Entry, FILE, digest

# sha256 of "ID TEXT | SETUP\n" for every seq 1 workload of the first fourteen tables, and for 300
# seq 2 ids drawn from them by random.Random(61), as the fourteen tables' code gave them
FOURTEEN_TABLES = (1466, "ebb61f36427e5079bf0f54117405fa907e344e8b9d776f93154a794d1fea34a1")
DRAWN = "317bde097bd3bb5de3a78aff13f2a3ef94f2b960f0980bed6bcc15242ab5a510"

BTRFS_231 = "creat A/foo; clone-hole.ranges A/foo, sync; clone-hole.truncate A/foo, fsync A/foo; " \
            "clone-hole.clone A/foo, fsync A/foo"
BTRFS_166 = "quota.enable, sync"
KIB = 1024


def test_every_seq1_id_of_the_fourteen_tables_names_the_same_workload():
    assert seq1_pin(14) == FOURTEEN_TABLES


def test_seq2_ids_of_the_fourteen_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(14, seed=61) == DRAWN


def test_the_sixteenth_tables_workloads_come_after_the_fourteen_tables():
    new = [w.text() for w in Space(1).workloads() if w.index >= 1481]  # after the fifteenth's
    assert new == ["clone-hole.ranges A/foo, sync", "clone-hole.ranges A/foo, fsync A/foo",
                   "clone-hole.ranges A/foo, fdatasync A/foo", "clone-hole.ranges A/foo, fsync-any .",
                   "clone-hole.ranges A/foo, fsync-any A", BTRFS_166, "quota.enable, fsync-any ."]
    assert workload_of(BTRFS_166).ident == "seq1-001486"
    assert Space(2, *up_to(14)).total() == 3141549  # the fourteen tables' count, as it was


def test_the_shape_holds_btrfs_231():
    shape = Space(4, shape=shape_named("clone-hole"))
    assert shape.total() == 256 and shape.workload(46).text() == BTRFS_231


def test_btrfs_231s_file_worked_out_by_hand():
    """Four ranges of 32 KiB of 'b' at 0, 64, 96 and 128 KiB (a hole at 32 KiB); cut to 100 KiB;
    the hole's 32 KiB cloned to 128 KiB: zeros from 100 KiB to the new end, 160 KiB."""
    files = [t.inode("A/foo").data for t in unnumbered(BTRFS_231).trees[1:]]
    assert files[0] == b""
    assert files[1] == b"b" * 32 * KIB + bytes(32 * KIB) + b"b" * 96 * KIB
    assert files[2] == b"b" * 32 * KIB + bytes(32 * KIB) + b"b" * 36 * KIB
    assert files[3] == b"b" * 32 * KIB + bytes(32 * KIB) + b"b" * 36 * KIB + bytes(60 * KIB)


def test_the_clone_takes_the_source_ranges_bytes_and_a_truncate_run_anyway_grows():
    """Over the setup's 16 KiB of 'A': the ranges' first overwrites it, so the hole is zeros and
    the clone writes zeros over the fourth range; on bytes that are no hole it copies them."""
    data = unnumbered("clone-hole.ranges A/foo; clone-hole.clone A/foo, sync").trees[-1].inode("A/foo").data
    assert data == b"a" * 32 * KIB + bytes(32 * KIB) + b"a" * 64 * KIB + bytes(32 * KIB)
    pattern = bytes(range(256)) * 256  # 64 KiB
    cloned = clonehole.clone_hole_data("clone-hole", "clone", pattern, 0x61)
    assert cloned == pattern + bytes(64 * KIB) + pattern[32 * KIB:]
    assert clonehole.clone_hole_data("clone-hole", "truncate", b"x" * 5, 0x61) == b"x" * 5 + bytes(100 * KIB - 5)


@pytest.mark.parametrize("text", [
    "clone-hole.truncate A/foo, sync",  # 16 KiB: the truncate is only down, from past 100 KiB
    "clone-hole.clone A/foo, sync",  # 16 KiB: the source range past the end
    "clone-hole.ranges A/foo; clone-hole.truncate A/foo; clone-hole.truncate A/foo, sync",  # 100 KiB already
])
def test_a_step_where_it_does_not_run_is_no_workload(text):
    with pytest.raises(AssertionError):
        unnumbered(text)


def test_the_size_check_catches_a_rule_that_lets_every_size_through(monkeypatch):
    monkeypatch.setitem(ops.FITS, "clone-hole", lambda family, variant, size, anyway=False: True)
    assert unnumbered("clone-hole.truncate A/foo, sync").trees[-1].kind("A/foo") == FILE


def stale(fill: bytes, start: int, end: int) -> dict:
    """231's last state with A/foo's range [start, end) holding `fill` again."""
    data = bytearray(unnumbered(BTRFS_231).trees[-1].inode("A/foo").data)
    data[start:end] = fill * (end - start)
    return state(BTRFS_231, changes={"A/foo": Entry(FILE, len(data), digest(bytes(data)), 1)})


def test_btrfs_231s_stale_range_after_the_last_fsync_is_caught():
    """The bug: the fsync after the clone logged the new size and no hole, and the log's replay
    brought the fourth range's extent (and the third's tail) back past 100 KiB."""
    workload = unnumbered(BTRFS_231)
    for bad in (stale(b"b", 128 * KIB, 160 * KIB), stale(b"b", 100 * KIB, 160 * KIB)):
        found = judge(workload, "btrfs", 3, bad)
        assert found.verdict == Verdict.DATA_LOSS and "A/foo" in found.reason
        assert judge(workload, "btrfs", 2, bad).verdict == Verdict.CLEAN  # the clone was owed nothing yet
    assert judge(workload, "btrfs", 3, state(BTRFS_231)).verdict == Verdict.CLEAN


def test_a_model_whose_clone_copies_stale_data_fails_231s_true_state(monkeypatch):
    """A clone that puts back what the fourth range held, not the hole's zeros: the state btrfs
    gives with the fix is then data loss, and the stale one clean."""
    def stale_clone(family, variant, data, fill):
        if variant != "clone":
            return clonehole.clone_hole_data(family, variant, data, fill)
        return data.ljust(128 * KIB, b"\0") + b"b" * 32 * KIB  # the fourth range's bytes (step 2's)
    true_state, bad = state(BTRFS_231), stale(b"b", 128 * KIB, 160 * KIB)
    monkeypatch.setitem(ops.MODELS, "clone-hole", stale_clone)
    on_profile.cache_clear()
    try:
        workload = unnumbered(BTRFS_231)
        assert judge(workload, "btrfs", 3, true_state).verdict == Verdict.DATA_LOSS
        assert judge(workload, "btrfs", 3, bad).verdict == Verdict.CLEAN
    finally:
        on_profile.cache_clear()


def test_where_nothing_clones_the_clone_is_refused_and_not_done():
    for fs in ("ext4", "f2fs", "xfs-2008"):
        assert "clone-hole.clone" in refusals(fs) and "clone-hole" not in refusals(fs)
        run = on_profile(unnumbered(BTRFS_231), fs)
        assert run.refused == {"clone-hole.clone"}
        assert run.trees[-1].inode("A/foo").data == b"b" * 32 * KIB + bytes(32 * KIB) + b"b" * 36 * KIB
    assert not {"clone-hole", "clone-hole.clone"} & (refusals("btrfs") | refusals("xfs"))


def test_the_program_writes_the_ranges_o_sync_and_checks_the_clone():
    lines = program(unnumbered(BTRFS_231)).splitlines()
    ranges = next(line for line in lines if "pwrite" in line)
    assert ranges.startswith("xfs_io -s ") and ranges.count("pwrite -q -S 0x62") == 4
    assert [o for o in (0, 65536, 98304, 131072) if f" {o} 32768" in ranges] == [0, 65536, 98304, 131072]
    assert 'xfs_io -c "truncate 102400" A/foo' in lines
    assert any('reflink -q A/foo 32768 131072 32768' in line and "pp_said" in line for line in lines)


def test_the_program_leaves_the_models_tree_where_the_host_refuses_the_clone(host_tools, tmp_path):  # noqa: F811
    """The host's filesystem (ext4 here) refuses the clone as ext4's profile says: the program
    leaves the refused model's tree; run as a filesystem that clones (xfs), it fails."""
    workload = unnumbered(BTRFS_231)
    refused_on_the_host(tmp_path, workload, on_profile(workload, "xfs"))


def test_the_quota_enable_changes_nothing_and_its_points_are_sync_and_any_names():
    workload = unnumbered("write.append A/foo; quota.enable, fsync-any A/foo")
    assert workload.trees[-1].view() == workload.trees[-2].view()
    offered = persistence_choices(workload.trees[-1], workload.steps[-1].op, last=True)
    assert offered[0] == Persist("sync") and {p.kind for p in offered[1:]} <= {"fsync-any", "fdatasync-any"}


@pytest.mark.parametrize("fs", ["ext4", "xfs", "f2fs", "xfs-2008"])
def test_every_other_filesystem_refuses_the_quota_enable(fs):
    run = on_profile(unnumbered(BTRFS_166), fs)
    assert run.refused == {"quota"} and quota_line("..", True) in program(run).splitlines()
    btrfs = on_profile(unnumbered(BTRFS_166), "btrfs")
    assert not btrfs.refused and "btrfs quota enable .." in program(btrfs).splitlines()


def test_the_models_own_states_after_the_sixteenth_tables_steps_are_clean():
    assert_own_states_clean(Space(1), range(1481, 1488))
    shape = Space(4, shape=shape_named("clone-hole"))
    assert_own_states_clean(shape, sorted({46, *random.Random(16).sample(range(shape.total()), 30)}))


def test_a_truncate_run_anyway_after_a_refused_step_is_modelled(monkeypatch):
    """btrfs refuses insert range: the file stays 100 KiB, and the truncate planned on 104 KiB
    still runs (the program runs it as planned), to the size it has; a rule that does not run
    it anyway leaves no model of that run."""
    workload = unnumbered("clone-hole.ranges A/foo; clone-hole.truncate A/foo; insert A/foo; "
                          "clone-hole.truncate A/foo, sync")
    run = on_profile(workload, "btrfs")
    assert run.refused == {"insert"} and len(run.trees[-1].inode("A/foo").data) == 100 * KIB
    monkeypatch.setitem(ops.FITS, "clone-hole", lambda family, variant, size, anyway=False:
                        clonehole.clone_hole_fits(family, variant, size))
    on_profile.cache_clear()
    try:
        with pytest.raises(ValueError):
            on_profile(workload, "btrfs").trees
    finally:
        on_profile.cache_clear()
