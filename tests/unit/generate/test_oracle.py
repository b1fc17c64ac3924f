"""The model oracle and the check of generated workloads, on hand-worked states: each rule owes
what its source says on the filesystems it holds on, and the check gives data-loss on a state
missing an owed fact, inconsistent on a state no point could give, clean on the model's own
states (`test_oracle_own_states`). Each rule in both directions: a state only it catches, and a
state the filesystem may give that it must pass (hand-worked, not taken from recordings). No VM."""

from dataclasses import replace

import pytest

from plugpull.check.verdict import Verdict
from plugpull.generate import oracle
from plugpull.generate.judge import judge, prefix_trees
from plugpull.generate.oracle import PROFILES, RULES, held, owed
from plugpull.generate.ops import INITIAL_SIZE
from plugpull.generate.space import workload_of
from plugpull.generate.tree import FILE, Blocks, digest


def owes(text: str, fs: str, k: int) -> dict:
    """(path, fact) -> (values, rule) after ack k."""
    return {(o.path, o.name): (o.values, o.rule) for o in owed(workload_of(text), fs, k)}


def verdict(text: str, fs: str, k, view) -> Verdict:
    return judge(workload_of(text), fs, k, view).verdict


def final(text: str):
    return workload_of(text).trees[-1].view()


def setup_view(text: str):
    return workload_of(text).trees[0].view()


def test_sync_persists_everything_on_linux_and_nothing_under_posix():
    text = "creat A/foo, sync"
    assert owes(text, "ext4", 1)[("A/foo", "kind")] == ({FILE}, "sync-all")
    assert owes(text, "ext4", 1)[("A/foo", "size")] == ({0}, "sync-all")
    assert owes(text, "posix", 1) == {}
    lost = setup_view(text)
    assert verdict(text, "xfs", 1, lost) == Verdict.DATA_LOSS
    assert verdict(text, "posix", 1, lost) == Verdict.CLEAN
    assert verdict(text, "xfs", 1, final(text)) == Verdict.CLEAN


@pytest.mark.parametrize("sync", ["fsync", "fdatasync"])
def test_fsync_and_fdatasync_owe_the_data_everywhere(sync):
    text = f"write.overwrite A/foo, {sync} A/foo"
    new = b"a" * 4096 + b"A" * (INITIAL_SIZE - 4096)
    found = owes(text, "posix", 1)
    assert found[("A/foo", "digest")] == ({digest(new)}, f"{sync}-data")
    assert found[("A/foo", "size")] == ({INITIAL_SIZE}, f"{sync}-data")
    for fs in PROFILES:
        assert verdict(text, fs, 1, setup_view(text)) == Verdict.DATA_LOSS  # the old contents
        assert verdict(text, fs, 1, final(text)) == Verdict.CLEAN
    assert verdict(text, "posix", 1, {}) == Verdict.CLEAN  # POSIX owes no name: the file may be gone


def test_a_later_write_releases_the_data_a_point_owed():
    text = "write.append A/foo, fsync A/foo; write.overwrite A/foo, sync"
    assert ("A/foo", "digest") not in owes(text, "ext4", 1)  # the overwrite changed it
    assert owes(text, "ext4", 1)[("A/foo", "size")] == ({INITIAL_SIZE + 4096}, "fsync-data")  # it did not
    assert owes(text, "ext4", 1)[("A/foo", "kind")] == ({FILE}, "fsync-names")
    torn = {**final(text), "A/foo": replace(final(text)["A/foo"], digest="0" * 64)}
    assert verdict(text, "ext4", 1, torn) == Verdict.CLEAN  # the second write may be torn
    assert verdict(text, "ext4", 2, torn) == Verdict.DATA_LOSS


def test_fsync_owes_link_count_names_and_xattrs_on_linux():
    text = "link A/foo A/bar, fsync A/foo"
    found = owes(text, "btrfs", 1)
    assert found[("A/foo", "nlink")] == ({2}, "fsync-nlink")
    assert found[("A/bar", "kind")] == ({FILE}, "fsync-names")
    assert ("A/foo", "nlink") not in owes(text, "posix", 1)
    wrong_count = {**final(text), "A/foo": replace(final(text)["A/foo"], nlink=1)}
    assert verdict(text, "btrfs", 1, wrong_count) == Verdict.DATA_LOSS
    no_link = setup_view(text)
    assert verdict(text, "xfs", 1, no_link) == Verdict.DATA_LOSS
    assert verdict(text, "posix", 1, no_link) == Verdict.CLEAN
    text = "setxattr A/foo, fsync A/foo"
    assert owes(text, "xfs", 1)[("A/foo", "xattrs")] == ({(("user.pp", "v1"),)}, "fsync-xattrs")
    assert verdict(text, "xfs", 1, setup_view(text)) == Verdict.DATA_LOSS
    assert verdict(text, "posix", 1, setup_view(text)) == Verdict.CLEAN


def test_a_missing_fsynced_new_file_is_data_loss():
    for text in ("creat A/foo, fsync A/foo", "creat A/foo, fdatasync A/foo"):
        rule = "fsync-names" if "fsync A" in text else "fdatasync-new-name"
        assert owes(text, "ext4", 1)[("A/foo", "kind")] == ({FILE}, rule)
        for fs in ("ext4", "xfs", "btrfs"):
            assert verdict(text, fs, 1, setup_view(text)) == Verdict.DATA_LOSS
        assert verdict(text, "posix", 1, setup_view(text)) == Verdict.CLEAN


def test_fsync_owes_no_name_that_only_a_lost_name_or_a_dir_rename_gave():
    text = "rename.file A/foo A/bar; creat A/foo; write.append A/bar, fsync A/bar"
    assert owes(text, "xfs", 1)[("A/foo", "kind")] == ({None, FILE}, "fsync-names")  # not A/bar's, maybe none
    no_new_file = {p: e for p, e in final(text).items() if p != "A/foo"}
    assert verdict(text, "xfs", 1, no_new_file) == Verdict.CLEAN
    assert verdict(text, "xfs", 1, {**final(text), "A/foo": final(text)["A/bar"]}) == Verdict.INCONSISTENT
    text = "rename.dir A B; write.append B/foo, fsync B/foo"
    assert owes(text, "xfs", 1)[("B/foo", "kind")] == ({None, FILE}, "sync-all")  # its fsync need not persist the dir rename
    assert verdict(text, "xfs", 1, setup_view(text)) == Verdict.CLEAN
    assert verdict(text, "xfs", 1, {}) == Verdict.DATA_LOSS  # the directory was owed by the setup's sync


def test_fdatasync_owes_no_name_a_rename_gave():
    text = "rename.file A/foo A/bar, fdatasync A/bar"
    found = owes(text, "ext4", 1)
    assert found[("A/bar", "kind")][1] == "sync-all"  # from the setup's sync, not the fdatasync
    assert verdict(text, "ext4", 1, setup_view(text)) == Verdict.CLEAN
    assert verdict(text, "ext4", 1, {"A": setup_view(text)["A"]}) == Verdict.DATA_LOSS  # the file is gone


def test_fdatasync_after_a_rename_over_owes_the_data_and_not_the_name():
    """fdatasync(A/bar) after `mv A/foo A/bar` owes A/foo's data, not the rename: A/bar may
    still be the file it was, with its own data (the name and its data go together)."""
    text = "rename.over A/foo A/bar, fdatasync A/bar"
    moved, kept = digest(b"A" * INITIAL_SIZE), digest(b"B" * INITIAL_SIZE)
    assert owes(text, "ext4", 1)[("A/bar", "digest")] == ({moved, kept}, "fdatasync-data")
    assert verdict(text, "ext4", 1, final(text)) == Verdict.CLEAN
    assert verdict(text, "ext4", 1, setup_view(text)) == Verdict.CLEAN  # the rename not yet durable
    garbage = {**final(text), "A/bar": replace(final(text)["A/bar"], digest=digest(b"x" * INITIAL_SIZE))}
    assert verdict(text, "ext4", 1, garbage) == Verdict.DATA_LOSS
    assert owes("write.overwrite A/foo, fdatasync A/foo", "ext4", 1)[("A/foo", "digest")][0] == {
        digest(b"a" * 4096 + b"A" * (INITIAL_SIZE - 4096))}  # a name that held no other file: its data alone


def test_a_directory_fsync_owes_its_entries():
    text = "creat A/foo, fsync A"
    assert owes(text, "xfs", 1)[("A/foo", "kind")] == ({FILE}, "fsync-dir-entries")
    assert ("A/foo", "size") not in owes(text, "xfs", 1)
    assert verdict(text, "xfs", 1, setup_view(text)) == Verdict.DATA_LOSS
    text = "unlink A/foo, fsync A"
    assert owes(text, "ext4", 1)[("A/foo", "kind")] == ({None}, "fsync-dir-entries")
    assert verdict(text, "ext4", 1, setup_view(text)) == Verdict.DATA_LOSS  # came back
    assert verdict(text, "ext4", 1, final(text)) == Verdict.CLEAN
    text = "symlink A/foo, fsync A"
    assert owes(text, "btrfs", 1)[("A/foo", "target")] == ({"bar"}, "fsync-dir-entries")


def test_ext4_owes_the_data_of_a_file_renamed_over_another():
    text = "write.append A/bar; rename.over A/bar A/foo, fsync A"
    found = owes(text, "ext4", 1)
    new = b"B" * INITIAL_SIZE + b"a" * 4096
    assert found[("A/foo", "digest")] == ({digest(new)}, "ext4-replace-via-rename")
    assert found[("A/foo", "size")] == ({INITIAL_SIZE + 4096}, "ext4-replace-via-rename")
    assert ("A/foo", "digest") not in owes(text, "xfs", 1)
    stale = {**final(text), "A/foo": replace(final(text)["A/foo"], digest=digest(b"B" * INITIAL_SIZE))}
    assert verdict(text, "ext4", 1, stale) == Verdict.DATA_LOSS
    assert verdict(text, "xfs", 1, stale) == Verdict.CLEAN
    assert ("B/bar", "digest") not in owes("rename.file A/bar B/bar, fsync B", "ext4", 1)  # replaced nothing


@pytest.mark.parametrize("text", [
    "write.append B/foo; rename.over B/foo A/foo, fsync A",
    "write.past-eof B/foo; rename.over B/foo A/foo, fsync A",
    "creat B/foo; write.overwrite B/foo; rename.over B/foo A/foo, fsync A",  # a new file's blocks: none allocated
    "write.overwrite B/foo, fsync B/foo; write.append B/foo; rename.over B/foo A/foo, fsync A",  # the overwrite durable
    "rename.over A/bar A/foo; creat A/bar, fsync A",  # nothing written since the setup's sync
])
def test_ext4_owes_the_renamed_data_where_all_written_since_it_was_durable_was_delayed(text):
    found = owes(text, "ext4", len(workload_of(text).points()))
    assert found[("A/foo", "digest")][1] == "ext4-replace-via-rename"


@pytest.mark.parametrize("text", [
    "write.overwrite B/foo; rename.over B/foo A/foo, fsync A",  # seq2-019015: allocated blocks
    "write.unaligned B/foo; rename.over B/foo A/foo, fsync A",  # into the file's blocks, then past its end
    "write.append B/foo, fsync B/foo; write.overwrite B/foo; rename.over B/foo A/foo, fsync A",
    "falloc.keep-size B/foo; write.append B/foo; rename.over B/foo A/foo, fsync A",  # the blocks were fallocated
    "dwrite.append B/foo; rename.over B/foo A/foo, fsync A",
    "truncate B/foo; rename.over B/foo A/foo, fsync A",
])
def test_ext4_owes_nothing_of_a_renamed_file_with_data_not_delayed(text):
    for k in range(len(workload_of(text).points()) + 1):
        assert all(rule != "ext4-replace-via-rename" for _, rule in owes(text, "ext4", k).values()), k


def owes_at_every_rename_over(ctx):
    """ext4-replace-via-rename as it was before: the renamed file's data at every rename over a file."""
    trees = ctx.inode_history()
    return [(s.op.args[1], n, oracle.fact(ctx.tree, s.op.args[1], n)) for i, s in enumerate(ctx.workload.steps[:ctx.step], 1)
            if s.op.family == "rename" and s.op.variant == "over" and oracle.parent(s.op.args[1]) == ctx.path
            and trees[i].kind(s.op.args[1]) == FILE for n in oracle.DATA]


def test_the_overwrite_renamed_over_a_file_that_ext4_lost_is_owed_nothing(monkeypatch):
    """seq2-019015 on ext4+fast_commit (7.3): after the directory's fsync, A/foo held its old
    contents, not B/foo's overwritten ones. ext4_alloc_da_blocks flushed nothing (no delayed
    blocks); the state passes now, and failed by the rule as it was."""
    text = "write.overwrite B/foo; rename.over B/foo A/foo, fsync A"
    assert workload_of(text).ident == "seq2-019015"
    lost = _with_digest(text, "A/foo", b"C" * INITIAL_SIZE)  # B/foo's setup contents
    assert verdict(text, "ext4", 1, lost) == Verdict.CLEAN
    monkeypatch.setattr(oracle, "RULES", tuple(replace(r, owes=owes_at_every_rename_over)
                                               if r.name == "ext4-replace-via-rename" else r for r in RULES))
    assert verdict(text, "ext4", 1, lost) == Verdict.DATA_LOSS


def test_a_half_done_rename_is_inconsistent():
    text = "rename.file A/foo B/bar, fsync B"
    both = {**final(text), "A/foo": final(text)["B/bar"]}  # one inode, both names
    assert verdict(text, "ext4", 1, both) == Verdict.INCONSISTENT
    assert verdict(text, "posix", None, both) == Verdict.INCONSISTENT  # whatever was acked
    assert "rename half done" in judge(workload_of(text), "ext4", 1, both).reason
    linked = "link A/foo B/bar, fsync B"
    assert verdict(linked, "ext4", 1, {**final(linked)}) == Verdict.CLEAN


def test_a_rename_that_loses_both_names_is_data_loss():
    text = "rename.file A/foo B/bar, fsync B"
    neither = {p: e for p, e in final(text).items() if p != "B/bar"}
    assert verdict(text, "ext4", 0, setup_view(text)) == Verdict.CLEAN  # not renamed yet
    assert verdict(text, "ext4", 0, final(text)) == Verdict.CLEAN  # renamed
    found = judge(workload_of(text), "ext4", 0, neither)
    assert found.verdict == Verdict.DATA_LOSS and "under none of A/foo, B/bar" in found.reason


def test_a_renamed_file_is_held_by_its_contents_not_only_its_kind():
    """generic_342's shape: the durable A/foo moves to A/bar and a new A/foo is fsynced. A new
    file under A/foo does not stand in for the old one: its contents tell them apart."""
    text = "rename.file A/foo A/bar; creat A/foo; write.append A/foo, fsync A/foo"
    w = workload_of(text)
    assert verdict(text, "ext4", 1, final(text)) == Verdict.CLEAN
    new_only = {p: e for p, e in final(text).items() if p != "A/bar"}
    found = judge(w, "ext4", 1, new_only)
    assert found.verdict == Verdict.DATA_LOSS and "A/foo (contents" in found.reason
    assert verdict(text, "posix", 1, new_only) == Verdict.CLEAN  # POSIX owes no name, not even after sync
    moved_back = {**new_only, "A/foo": replace(setup_view(text)["A/foo"], ino=new_only["A/foo"].ino)}
    assert verdict(text, "ext4", 0, moved_back) == Verdict.CLEAN  # the rename not yet durable


def test_a_moved_file_whose_contents_change_later_is_held_by_kind():
    """Contents a later write changes cannot tell the file apart (the write may be torn)."""
    text = "rename.file A/foo A/bar; creat A/foo; write.append A/bar, fsync A/bar"
    w = workload_of(text)
    torn = {**final(text), "A/bar": replace(final(text)["A/bar"], digest="0" * 64)}
    assert verdict(text, "ext4", 0, torn) == Verdict.CLEAN
    assert all(h.digest is None for h in held(w, "ext4", 0) if h.kind == FILE)


def test_a_name_no_point_has_is_inconsistent():
    text = "creat A/foo, sync"
    assert verdict(text, "ext4", None, {**final(text), "B": final(text)["A"]}) == Verdict.INCONSISTENT
    dir_as_file = {**final(text), "A/foo": replace(final(text)["A"], ino=99)}
    assert verdict(text, "ext4", None, dir_as_file) == Verdict.INCONSISTENT
    assert [len(t.paths) for t in prefix_trees(workload_of(text))] == [0, 1, 2]


def _with_extents(text: str, blocks) -> dict:
    """The last tree, A/foo's extents (fiemap) covering `blocks`."""
    return {**final(text), "A/foo": replace(final(text)["A/foo"], extents=Blocks(blocks))}


def _with_digest(text: str, path: str, data: bytes) -> dict:
    return {**final(text), path: replace(final(text)[path], digest=digest(data))}


NEW_MAPPED = "creat A/foo; write.past-eof A/foo; mmap.ends A/foo, msync-head A/foo"  # 12 KiB: 8 of zeros, 4 of b
HEAD_ONLY = b"a" * 4096 + b"A" * 12288  # mmap.ends's first page synced, its last not yet


# rule -> (workload, profile, ack, a state after that ack that breaks the rule and nothing else)
BROKEN_BY_ONE_RULE = {
    "sync-all": ("creat A/foo, sync", "ext4", 1, setup_view),
    "fsync-data": ("write.overwrite A/foo, fsync A/foo", "xfs", 1, setup_view),
    "fdatasync-data": ("write.overwrite A/foo, fdatasync A/foo", "btrfs", 1, setup_view),
    "fsync-nlink": ("link A/foo A/bar, fsync A/foo", "btrfs", 1,
                    lambda t: {**final(t), "A/foo": replace(final(t)["A/foo"], nlink=1)}),
    "fsync-xattrs": ("setxattr A/foo, fsync A/foo", "xfs", 1, setup_view),
    "fsync-names": ("creat A/foo, fsync A/foo", "ext4", 1, setup_view),
    "fdatasync-new-name": ("creat A/foo, fdatasync A/foo", "xfs", 1, setup_view),
    "fsync-dir-entries": ("creat A/foo, fsync A", "btrfs", 1, setup_view),
    "ext4-replace-via-rename": ("write.append A/bar; rename.over A/bar A/foo, fsync A", "ext4", 1,
                                lambda t: _with_digest(t, "A/foo", b"B" * INITIAL_SIZE)),
    "msync-data": ("mmapwrite.overwrite A/foo, msync A/foo", "xfs", 1, setup_view),
    "msync-new-name": ("creat A/foo; mmapwrite.extend A/foo, msync A/foo", "f2fs", 1, setup_view),
    "fsync-unlinked-names": ("unlink-open A/foo, fsync-open A/foo", "btrfs", 1, setup_view),  # the name back
    "msync-range-data": ("mmap.ends A/foo, msync-head A/foo", "xfs", 1, setup_view),  # the synced page lost
    "msync-range-new-name": (NEW_MAPPED, "f2fs", 1, setup_view),
    "fsync-extents": ("falloc-eof.keep-size A/foo, fsync A/foo", "btrfs", 1,
                      lambda t: _with_extents(t, {0, 1, 2, 3})),  # the file's blocks, none past its end
}


def test_every_rule_has_a_source_a_name_of_its_own_and_a_state_that_breaks_it():
    assert all(rule.source and rule.filesystems for rule in RULES)
    assert len({rule.name for rule in RULES}) == len(RULES)
    assert set(BROKEN_BY_ONE_RULE) == {rule.name for rule in RULES}


@pytest.mark.parametrize("rule", list(BROKEN_BY_ONE_RULE))
def test_each_rule_is_exercised_it_alone_catches_a_state_that_breaks_it(rule, monkeypatch):
    """The state is data-loss, every lost fact names this rule, and with the rule taken out of
    the table the same state is clean: the rule is what catches it."""
    text, fs, k, broken = BROKEN_BY_ONE_RULE[rule]
    state = broken(text)
    found = judge(workload_of(text), fs, k, state)
    assert found.verdict == Verdict.DATA_LOSS, found.reason
    assert found.lost and all(f"({rule}, point" in why for _, why in found.lost), found.lost
    monkeypatch.setattr(oracle, "RULES", tuple(r for r in RULES if r.name != rule))
    assert judge(workload_of(text), fs, k, state).verdict == Verdict.CLEAN


def _without(text: str, path: str) -> dict:
    return {p: e for p, e in final(text).items() if p != path}


def _torn(text: str, path: str) -> dict:
    return {**final(text), path: replace(final(text)[path], digest="0" * 64)}


# rule -> (workload, profile, ack, a state the filesystem may give there, which the rule must pass:
# the rule is in play, and a rule that owed more than the filesystem promises would fail it)
PASSED_BY_EACH_RULE = {
    "sync-all": ("write.append A/foo, sync; write.overwrite A/foo, sync", "ext4", 1,
                 lambda t: _torn(t, "A/foo")),  # the later overwrite may be torn
    "fsync-data": ("write.overwrite A/foo, fsync A/foo", "xfs", 0, setup_view),  # not yet acked
    "fdatasync-data": ("rename.over A/foo A/bar, fdatasync A/bar", "ext4", 1, setup_view),  # the rename not durable
    "fsync-nlink": ("link A/foo A/bar, fsync A/foo; unlink A/bar, sync", "btrfs", 1, final),  # a later unlink
    "fsync-xattrs": ("setxattr A/foo, fsync A/foo", "xfs", 0, setup_view),
    "fsync-names": ("rename.file A/foo A/bar; creat A/foo; write.append A/bar, fsync A/bar", "xfs", 1,
                    lambda t: _without(t, "A/foo")),  # the new A/foo was never fsynced
    "fdatasync-new-name": ("creat A/foo, fdatasync A/foo; rename.file A/foo A/bar, sync", "ext4", 1, final),
    "fsync-dir-entries": ("creat A/foo, fsync A; unlink A/foo, sync", "xfs", 1, final),  # a later unlink
    "ext4-replace-via-rename": ("rename.over A/bar A/foo; write.append A/foo; creat A/bar, fsync A", "ext4", 1,
                                lambda t: {**final(t), "A/foo": replace(final(t)["A/foo"], size=INITIAL_SIZE,
                                                                        digest=digest(b"B" * INITIAL_SIZE))}),
    "msync-data": ("mmapwrite.extend A/foo, msync A/foo; write.overwrite A/foo, sync", "btrfs", 1,
                   lambda t: _torn(t, "A/foo")),  # the later overwrite may be torn
    "msync-new-name": ("creat A/foo; mmapwrite.extend A/foo, msync A/foo; rename.file A/foo A/bar, sync", "ext4",
                       1, final),
    "fsync-unlinked-names": ("unlink-open A/foo, fsync-open A/foo; creat A/foo, sync", "ext4", 1,
                             final),  # a later file under the name
    "msync-range-data": ("mmap.ends A/foo, msync-head A/foo", "xfs", 1,
                         lambda t: _with_digest(t, "A/foo", HEAD_ONLY)),  # the other page not synced
    "msync-range-new-name": (NEW_MAPPED, "ext4", 1,
                             lambda t: _with_digest(t, "A/foo", b"c" * 4096 + bytes(4096) + b"b" * 4096)),
    "fsync-extents": ("falloc-eof.keep-size A/foo, fsync A/foo; truncate A/foo, sync", "xfs", 1,
                      lambda t: _with_extents(t, {0})),  # the later truncate down frees them
}


def test_every_rule_has_a_state_it_must_pass():
    assert set(PASSED_BY_EACH_RULE) == {rule.name for rule in RULES}


@pytest.mark.parametrize("rule", list(PASSED_BY_EACH_RULE))
def test_no_rule_owes_more_than_the_filesystem_promises(rule):
    text, fs, k, allowed = PASSED_BY_EACH_RULE[rule]
    found = judge(workload_of(text), fs, k, allowed(text))
    assert found.verdict == Verdict.CLEAN, found.reason


def test_ext4_owes_the_renamed_data_only_while_the_file_still_has_it():
    """auto_da_alloc forces out the data a file had when it was renamed over another; an append
    made after the rename and before the directory's fsync is forced by nothing. Without the
    append, the same point owes the renamed data (the rule is in play in that workload)."""
    renamed = digest(b"B" * INITIAL_SIZE)
    assert owes("rename.over A/bar A/foo; creat A/bar, fsync A", "ext4", 1)[("A/foo", "digest")] == (
        {renamed}, "ext4-replace-via-rename")
    assert ("A/foo", "digest") not in owes(PASSED_BY_EACH_RULE["ext4-replace-via-rename"][0], "ext4", 1)
