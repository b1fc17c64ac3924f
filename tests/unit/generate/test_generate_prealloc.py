"""Blocks preallocated past a file's end (`prealloc`): what the model owes of them (the rule
`fsync-extents`), fstests generic/677's and btrfs/211's steps in the two shapes that hold them,
the blocks worked out by hand, pp-tree's extents read back, and the check shown to catch a state
that lost them (and to let it through with the rule taken out). The family is in no table: the
ids and counts of the fourteen tables are those their code gave. No VM."""

import pytest
from tests.unit.generate.pins import seq1_pin, seq2_drawn_pin
from tests.unit.generate.test_generate_names import state, unnumbered
from tests.unit.generate.test_program import collect_on_host, host_tools, run_on_host  # noqa: F401

from plugpull.check.checker import TREE
from plugpull.check.verdict import Verdict
from plugpull.generate import oracle
from plugpull.generate.ops import up_to
from plugpull.generate.judge import judge
from plugpull.generate.prealloc import covered
from plugpull.generate.shapes import shape_named
from plugpull.generate.space import Space, space_of, whole_space
from plugpull.generate.tree import BLOCK, Blocks
from plugpull.generate.workload import GeneratedWorkload, collected

# every seq-1 workload and 300 seq-2 ids drawn by random.Random(53) of the fourteen tables, as
# the fourteen tables' code gave them (`pins`)
FOURTEEN_TABLES = (1466, "ebb61f36427e5079bf0f54117405fa907e344e8b9d776f93154a794d1fea34a1")
DRAWN = "a2ba33d1b3971e185d44463e906870029411f7f88ccad064174f34892a6008d1"
GENERIC_677 = "dwrite.append A/foo; falloc-eof.keep-size A/foo; prealloc.gap A/foo, sync; " \
              "write.overwrite A/foo, fsync A/foo"
BTRFS_211 = "creat A/foo; falloc-eof.keep-size A/foo; prealloc.next A/foo, fsync A/foo; " \
            "prealloc.head A/foo, fsync A/foo; prealloc.cover A/foo, fsync A/foo"
EOF_FSYNC = "falloc-eof.keep-size A/foo, fsync A/foo"  # seq1-000417: generic/483's foo


def test_every_seq1_id_of_the_fourteen_tables_names_the_same_workload():
    assert seq1_pin(14) == FOURTEEN_TABLES


def test_seq2_ids_of_the_fourteen_tables_drawn_at_random_name_the_same_workloads():
    assert seq2_drawn_pin(14, seed=53) == DRAWN
    assert Space(2, *up_to(14)).total() == 3141549  # no seq takes the family
    assert not any(w.steps[0].op.family == "prealloc" for w in Space(1).workloads())


def test_the_shapes_hold_generic_677_and_btrfs_211():
    gap, truncate = Space(4, shape=shape_named("eof-gap")), Space(5, shape=shape_named("eof-truncate"))
    assert (gap.total(), truncate.total()) == (147456, 49152)
    assert gap.workload(115346).text() == GENERIC_677
    assert truncate.workload(206).text() == BTRFS_211
    assert Space(5, shape=shape_named("hole-merge")).total() == 38416  # an earlier shape's count kept
    assert whole_space(1).workload(417).text() == EOF_FSYNC


def test_generic_677s_blocks_worked_out_by_hand():
    """16 KiB, a direct-I/O write of 4 KiB at its end: 20 KiB, blocks 0 to 4; falloc -k of 2
    blocks at the size: 5 and 6; a second one a block after them: 8 and 9; the write at 0 keeps them."""
    trees = unnumbered(GENERIC_677).trees
    assert [sorted(t.inode("A/foo").prealloc) for t in trees[1:]] == [[], [5, 6], [5, 6, 8, 9], [5, 6, 8, 9]]
    assert [len(t.inode("A/foo").data) for t in trees[1:]] == [20480] * 4


def test_btrfs_211s_blocks_worked_out_by_hand():
    """A new file: falloc -k 0+8 KiB, 8+8 KiB: blocks 0 to 3 past the end; falloc 0+4 KiB: size
    4 KiB of zeros; a truncate up to 16 KiB takes the blocks in, still owed."""
    trees = unnumbered(BTRFS_211).trees
    assert [sorted(t.inode("A/foo").prealloc) for t in trees[2:]] == [[0, 1], [0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
    assert [len(t.inode("A/foo").data) for t in trees[1:]] == [0, 0, 0, 4096, 16384]
    assert trees[-1].inode("A/foo").data == bytes(16384)


@pytest.mark.parametrize("text, freed", [
    ("falloc-eof.keep-size A/foo; truncate A/foo, fsync A/foo", True),  # a truncate down frees them
    ("falloc-eof.keep-size A/foo; prealloc.cover A/foo, fsync A/foo", True),  # to the same size: frees them too
    ("falloc-eof.keep-size A/foo; falloc.punch-hole A/foo, fsync A/foo", True),  # a punch: owed no more
    ("falloc-eof.keep-size A/foo; write.append A/foo, fsync A/foo", False),
    ("falloc-eof.keep-size A/foo; reflink.file A/bar A/foo, fsync A/foo", True),  # a clone: owed no more
])
def test_later_operations_keep_or_free_the_blocks(text, freed):
    owed = [o for o in oracle.owed(unnumbered(text), "btrfs", 1) if o.name == "extents"]
    assert owed == [] if freed else [o.values for o in owed] == [{Blocks({4, 5})}]


def with_extents(text: str, blocks) -> dict:
    """The workload's last tree, A/foo's extents covering `blocks`."""
    view = state(text)
    return state(text, changes={"A/foo": view["A/foo"].__class__(**{**view["A/foo"].__dict__,
                                                                     "extents": Blocks(blocks)})})


@pytest.mark.parametrize("fs", ["ext4", "xfs", "btrfs", "f2fs"])
def test_a_state_that_lost_the_extents_past_the_end_is_data_loss(fs):
    workload = unnumbered(GENERIC_677)
    kept = judge(workload, fs, 2, with_extents(GENERIC_677, range(10)))
    assert kept.verdict == Verdict.CLEAN, kept.reason
    assert judge(workload, fs, 2, with_extents(GENERIC_677, range(16))).verdict == Verdict.CLEAN  # more: not judged
    assert judge(workload, fs, 2, with_extents(GENERIC_677, range(7))).verdict == Verdict.DATA_LOSS  # the second range
    lost = judge(workload, fs, 2, with_extents(GENERIC_677, range(5)))  # owed by the sync, then the fsync
    assert lost.verdict == Verdict.DATA_LOSS
    assert lost.reason.startswith("A/foo: extents is blocks {0, 1, 2, 3, 4}, owed blocks {5, 6, 8, 9} (fsync-extents")
    assert judge(workload, fs, 2, state(GENERIC_677)).verdict == Verdict.CLEAN  # extents not read: not judged
    assert judge(unnumbered(GENERIC_677), "posix", 2, with_extents(GENERIC_677, range(5))).verdict == Verdict.CLEAN


def test_the_check_lets_a_lost_extent_through_without_the_rule(monkeypatch):
    """The deliberately wrong oracle (no `fsync-extents`): 211's state that lost the first
    range's second block (its partial loss) is clean, which the rule's test above would catch."""
    workload = unnumbered(BTRFS_211)
    lost = with_extents(BTRFS_211, {0, 2, 3})
    assert judge(workload, "btrfs", 3, lost).verdict == Verdict.DATA_LOSS
    monkeypatch.setattr(oracle, "RULES", tuple(r for r in oracle.RULES if r.name != "fsync-extents"))
    assert judge(workload, "btrfs", 3, lost).verdict == Verdict.CLEAN


def test_fdatasync_owes_no_extents():
    """Without the sync: fsync owes the blocks past the end, fdatasync not (no read needs them)."""
    fsync = GENERIC_677.replace(", sync;", ";")
    fdatasync = fsync.replace("fsync A/foo", "fdatasync A/foo")
    assert judge(unnumbered(fsync), "btrfs", 1, with_extents(fsync, range(5))).verdict == Verdict.DATA_LOSS
    assert judge(unnumbered(fdatasync), "btrfs", 1, with_extents(fdatasync, range(5))).verdict == Verdict.CLEAN


def test_pp_trees_extent_lines_read_as_the_blocks_they_cover():
    text = "entry A/foo 81a4 16384 1 13 " + "0" * 64 + " -\nextent A/foo 0 16384 1\nextent A/foo 20480 6000 801\n" \
           "entry snap/A/foo 81a4 0 1 14 " + "0" * 64 + " -\nextent snap/A/foo 0 4096 1\n"
    tree, strays = collected(text)
    assert tree["A/foo"].extents == {0, 1, 2, 3, 5, 6} and strays == []
    assert covered([]) == set() and covered([(4095, 2)]) == {0, 1}
    with pytest.raises(ValueError):
        collected("extent A/foo 0 4096\n")  # a field short


@pytest.mark.parametrize("ident", ["seq4.eof-gap-115346", "seq5.eof-truncate-000206", "seq1-000417"])
def test_the_program_preallocates_what_the_model_owes_on_the_host(ident, host_tools, tmp_path):  # noqa: F811
    """Run on the host's filesystem, pp-tree's extents judged by every Linux profile: clean at
    the last point; with the file rewritten sparse (its data, no block past its end), not."""
    workload = space_of(ident).parse(ident)
    run_on_host(workload, tmp_path / "w", host_tools)
    k = len(workload.points())
    for fs in ("ext4", "xfs", "btrfs", "f2fs"):
        files = {TREE: collect_on_host(tmp_path / "w", host_tools).encode()}
        found = GeneratedWorkload(workload.ident, fs).examine(list(range(k + 1)), files)
        assert (found.lost, found.broken) == ([], []), (fs, found)
    with open(tmp_path / "w" / "A" / "foo", "r+b") as f:
        data = f.read()
        f.truncate(0)
        f.truncate(len(data))
        for at in range(0, len(data), BLOCK):
            if any(data[at:at + BLOCK]):
                f.seek(at)
                f.write(data[at:at + BLOCK])
    files = {TREE: collect_on_host(tmp_path / "w", host_tools).encode()}
    reasons = [x.reason for x in GeneratedWorkload(workload.ident, "btrfs").examine(list(range(k + 1)), files).lost]
    assert reasons and all("extents" in r for r in reasons), reasons
