"""The sixth operation table: inode eviction between steps (`evict`), the persistence of a name
the step did not touch (`fsync-any`, `fdatasync-any`), and reflink and copy_file_range between
two files (`reflink.file`, `reflink.range`, `copy`). The ids the first five tables gave name the
same workloads (pinned by digests of the five tables' code); the new ones come after them; each
model rule is checked on hand-worked values and states, and each check is shown to catch a
deliberately wrong rule. No VM."""

import hashlib
import os
import random
import subprocess
from dataclasses import replace

import pytest
from tests.unit.generate.pins import line
from tests.unit.generate.test_generate_later import host_tools, program_leaves_the_models_tree  # noqa: F401
from tests.unit.generate.test_generate_range import run_in
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean, table_block

from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.generate import oracle, ops, reach
from plugpull.generate.judge import judge
from plugpull.generate.oracle import LINUX, PROFILES, on_profile, owed, refusals
from plugpull.generate.ops import INITIAL_SIZE, Op, Persist, up_to
from plugpull.generate.points import persistence_choices
from plugpull.generate.program import program
from plugpull.generate.space import Space, Step, forget_counts, workload_of
from plugpull.generate.tree import digest, read_tree

# sha256 of "ID TEXT | SETUP\n" for every workload of the first five tables (seq 1 and 2), and
# for ids drawn from them by random.Random(46) (seq 2) and random.Random(45) (seq 3), as the
# five tables' code gave them
FIVE_TABLES = {1: (539, "86ccde56234e41f0635f447c5b3999842f829e832e14d5e8037c6d01d99fb74c"),
               2: (300637, "5a1ae5acfbfc3cc90d7a0fdbc6470d160771d062efab6fc8f0fb1135428affff")}
DRAWN = {(2, 300): "07915ecdd346014e381beabc5a7563011b431fa7d61a56de33ddee2bc9536af3",
         (2, 2000): "aa15f6b4492ef2a2ece4101bc4a1dd7677c71f9c484a3c206d8b41d3470151c4",
         (3, 300): "164aaea9da06948306b07eb0e76a198a928a225953c1265f8b3d6f5539ddd77f",
         (3, 3000): "45a9c3118c4bff9e071f49805d4b83dcc2c07b582593ce4ba05426b00715b46f"}



def listed_digest(seq: int) -> tuple[int, str]:
    digest_, count = hashlib.sha256(), 0
    for workload in Space(seq, *up_to(5)).workloads():
        digest_.update(line(workload))
        count += 1
    return count, digest_.hexdigest()


def drawn_digest(seq: int, k: int) -> str:
    space, whole = Space(seq, *up_to(5)), Space(seq)
    digest_ = hashlib.sha256()
    for index in sorted(random.Random({2: 46, 3: 45}[seq]).sample(range(space.total()), k)):
        digest_.update(line(whole.workload(index)))
    return digest_.hexdigest()


def test_every_seq1_id_of_the_five_tables_names_the_same_workload():
    assert listed_digest(1) == FIVE_TABLES[1]


@pytest.mark.slow
def test_every_seq2_id_of_the_five_tables_names_the_same_workload():
    assert listed_digest(2) == FIVE_TABLES[2]


@pytest.mark.parametrize("seq, k", [(2, 300), pytest.param(2, 2000, marks=pytest.mark.slow), (3, 300),
                                    pytest.param(3, 3000, marks=pytest.mark.slow)])
def test_ids_of_the_five_tables_drawn_at_random_name_the_same_workloads(seq, k):
    assert drawn_digest(seq, k) == DRAWN[seq, k]


def test_the_sixth_tables_workloads_come_after_the_five_tables_and_are_pinned():
    assert [Space(seq, *up_to(6)).total() for seq in (1, 2)] == [1038, 1505275]
    assert [Space(1).workload(i).text() for i in (539, 560, 1037)] == [
        "creat A/foo, fsync-any .", "write.append B/foo, fsync-any B", "copy B/bar B/foo, fsync-any B"]
    assert Space(2).workload(300637).text() == "creat A/foo; creat A/bar, fsync-any A/foo"
    assert workload_of("reflink.range A/foo A/bar, fsync A/bar").ident == "seq1-000770"
    assert workload_of("write.append A/foo; creat A/bar, fsync-any A/foo").ident == "seq2-322251"
    assert Space(2).locate(Space(2).workload(1400000).steps) == 1400000
    assert Space(1, ("reflink", "copy"), ("fsync", "fdatasync", "sync")).total() == 108
    assert Space(2, ("evict",), ("sync",)).total() == 2  # "evict; evict, sync" and "evict, sync; evict, sync"


def test_old_names_give_only_old_ids():
    """`--ops` without the sixth table's names is a filter of the five tables: the ids it gave before."""
    old = Space(2, ("creat", "write"), ("fsync",))
    listed = [w.index for w in old.workloads()]
    assert len(listed) == old.total() and max(listed) < 300637
    grown = [w.index for w in Space(2, ("creat", "write"), ("fsync", "fsync-any")).workloads()]
    assert set(listed) < set(grown) and min(set(grown) - set(listed)) >= 300637


# --- evict ---------------------------------------------------------------------------------

EVICTED = "write.append A/foo; evict; creat B/foo, fsync B/foo"


def evict_owes_nothing(text: str) -> None:
    """Eviction changes nothing in the model tree, and every point owes what it owes without
    it: drop_caches writes nothing back (dirty objects are not freed)."""
    workload = workload_of(text)
    kept: list[Step] = []
    for s in workload.steps:  # an eviction's point goes to the step before it, which had none
        if s.op.family != "evict":
            kept.append(s)
        elif s.persist:
            assert kept and kept[-1].persist is None, text
            kept[-1] = Step(kept[-1].op, s.persist)
    twin = replace(workload, steps=tuple(kept))
    evicts = [i for i, s in enumerate(workload.steps, 1) if s.op.family == "evict"]
    assert all(workload.trees[i] == workload.trees[i - 1] for i in evicts)
    for fs in PROFILES:
        for k in range(len(workload.points()) + 1):
            mine = {(o.path, o.name, o.values, o.rule, o.point) for o in owed(workload, fs, k)}
            assert mine == {(o.path, o.name, o.values, o.rule, o.point) for o in owed(twin, fs, k)}, (fs, k)
    state = {**workload.trees[-1].view(), "A/foo": workload.trees[0].entry("A/foo")}  # the append not on disk
    assert {judge(workload, fs, 1, state).verdict for fs in PROFILES} == {Verdict.CLEAN}


@pytest.mark.parametrize("text", [EVICTED, "link A/foo A/bar, sync; evict; unlink A/bar, fsync-any A/foo",
                                  "link A/foo A/bar, sync; unlink A/bar; evict, fsync-any A/foo"])  # generic/106
def test_evict_changes_nothing_and_owes_nothing(text):
    evict_owes_nothing(text)


def test_the_evict_check_catches_a_rule_that_takes_eviction_for_writeback(monkeypatch):
    """A wrong rule: eviction writes the dirty inodes back, so the next point owes what a sync did."""
    real = oracle.owed_at

    def written_back(workload, fs, point):
        facts = real(workload, fs, point)
        step = oracle.end_step(workload, point)
        if point and any(s.op.family == "evict" for s in workload.steps[:step]) and fs in LINUX:
            ctx = oracle.Context(workload, step, workload.trees[step], None)
            facts.update({(p, n): (v, "evict-writes-back") for p, n, v in oracle.sync_all(ctx)})
        return facts

    monkeypatch.setattr(oracle, "owed_at", written_back)
    with pytest.raises(AssertionError):
        evict_owes_nothing(EVICTED)


def test_after_evict_the_points_are_sync_and_those_of_a_name_it_did_not_touch():
    tree = workload_of("write.append A/foo, sync").trees[-1]
    kinds = {p.kind for p in persistence_choices(tree, Op("evict", "", ()), last=True)}
    assert kinds == {"sync", "fsync-any", "fdatasync-any"}
    assert None in persistence_choices(tree, Op("evict", "", ()), last=False)
    assert all("evict" not in refusals(fs) for fs in (*PROFILES, "xfs-2008", "ext3", "f2fs+compress"))


def test_evicts_command_is_drop_caches_of_inodes_and_the_program_runs_on_the_host(host_tools, tmp_path):
    text = "link A/foo A/bar, sync; evict; unlink A/bar, fsync-any A/foo"
    assert "\necho 2 > /proc/sys/vm/drop_caches\n" in program(workload_of(text))
    if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        pytest.skip("drop_caches is not writable here (not root)")
    program_leaves_the_models_tree(text, True, tmp_path)


# --- fsync-any, fdatasync-any --------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "creat A/foo, fsync-any A/foo",  # the step's own point: fsync A/foo
    "creat A/foo, fsync-any B/bar",  # B/bar untouched: not there, and a point makes no setup
    "write.append A/foo; unlink A/foo, fsync-any A/foo",  # gone
    "symlink A/foo, fsync-any A/foo",  # the step's own name, and no file
    "creat A/foo, fsync-any A",  # the step's own directory
])
def test_a_point_of_a_name_that_is_not_there_or_the_steps_own_is_no_workload(text):
    with pytest.raises(UsageError):
        workload_of(text)


def test_the_program_fsyncs_and_fdatasyncs_the_untouched_name():
    text = program(workload_of("write.append A/foo; creat A/bar, fdatasync-any A/foo; unlink A/bar, fsync-any ."))
    assert "\nsync -d A/foo  # point 1: fdatasync-any A/foo\n" in text and "\nsync .  # point 2: fsync-any .\n" in text


ANY = ["write.append A/foo; creat A/bar, fsync-any A/foo",
       "write.append A/foo; creat A/bar, fdatasync-any A/foo",
       "link A/foo A/bar; write.append B/bar, fsync-any A/foo",
       "creat A/foo; write.append B/bar, fsync-any A",
       "rename.file A/foo B/foo; write.overwrite A/bar, fsync-any B",
       "creat A/foo; rename.dir A B, fsync-any B/foo"]


def owes_as_its_call(text: str, synced: bool = True) -> None:
    """A point of a name the step did not touch owes what the same call owes where the step
    touched it: the rules are the call's (fsync of a file or directory, fdatasync of a file)."""
    workload = workload_of(text, synced)
    twin = replace(workload, steps=tuple(Step(s.op, s.persist and Persist(s.persist.call, s.persist.path))
                                         for s in workload.steps))
    for fs in PROFILES:
        for k in range(len(workload.points()) + 1):
            assert owed(workload, fs, k) == owed(twin, fs, k), (fs, k)
    assert owed(workload, "ext4", 1), "owes nothing: the call's rules were not applied"


@pytest.mark.parametrize("synced", [True, False])
@pytest.mark.parametrize("text", ANY)
def test_a_point_of_an_untouched_name_owes_what_its_call_owes(text, synced):
    owes_as_its_call(text, synced)


def test_the_check_catches_a_point_that_owes_by_its_name_and_not_its_call(monkeypatch):
    """The wrong rule: the trigger taken from the point's name (fsync-any-file), which no
    rule has, so the point owes nothing."""
    def by_name(workload, step):
        persist = workload.steps[step - 1].persist
        if persist.kind == "sync":
            return "sync", None
        kind = workload.trees[step].kind(persist.path)
        return f"{persist.kind}-{'dir' if kind == 'dir' else 'file'}", persist.path

    monkeypatch.setattr(oracle, "trigger_of", by_name)
    with pytest.raises(AssertionError):
        owes_as_its_call(ANY[0])


def final(text: str, fs: str = "ext4") -> dict:
    return on_profile(workload_of(text), fs).trees[-1].view()


def verdicts(text: str, state: dict, k: int = 1) -> dict:
    return {fs: judge(workload_of(text), fs, k, state).verdict for fs in PROFILES}


@pytest.mark.parametrize("text, rule", [(ANY[0], "fsync-data"), (ANY[1], "fdatasync-data")])
def test_an_untouched_files_fsync_owes_its_data_written_steps_before(text, rule):
    """POSIX fsync() and fdatasync(): all the file's data, whichever step wrote it."""
    state = {**final(text), "A/foo": workload_of(text).trees[0].entry("A/foo")}
    for fs in PROFILES:
        found = judge(workload_of(text), fs, 1, state)
        assert found.verdict == Verdict.DATA_LOSS and rule in found.reason, (fs, found.reason)
    assert set(verdicts(text, final(text)).values()) == {Verdict.CLEAN}


def test_an_untouched_files_fsync_owes_its_names_and_an_untouched_directorys_its_entries():
    linked = ANY[2]
    lost = {p: e for p, e in final(linked).items() if p != "A/bar"}
    made = ANY[3]
    gone = {p: e for p, e in final(made).items() if p != "A/foo"}
    for text, state, rule in ((linked, lost, "fsync-names"), (made, gone, "fsync-dir-entries")):
        found = verdicts(text, state)
        assert {found[fs] for fs in LINUX} == {Verdict.DATA_LOSS} and found["posix"] == Verdict.CLEAN, text
        assert rule in judge(workload_of(text), "xfs", 1, state).reason


def test_a_file_in_a_renamed_directory_is_not_owed_the_name_the_rename_gave():
    """fsync-names owes no name a directory rename gave (xfs logs the directories), for an
    untouched file as for a touched one: B/foo may still be A/foo."""
    text = ANY[5]
    state = {p: e for p, e in workload_of(text).trees[1].view().items()}  # the rename not on disk
    assert verdicts(text, state)["xfs"] == Verdict.CLEAN


# --- reflink and copy ----------------------------------------------------------------------

A, B = b"A" * INITIAL_SIZE, b"B" * INITIAL_SIZE  # the setup's A/foo and A/bar
HAND = {  # the destination's contents, worked out by hand from FICLONE, FICLONERANGE, copy_file_range
    "reflink.file A/foo A/bar, fsync A/bar": A,
    "reflink.range A/foo A/bar, fsync A/bar": b"B" * 4096 + b"A" * 4096 + b"B" * 8192,
    "copy A/foo A/bar, fsync A/bar": A,
    "truncate A/bar; reflink.file A/foo A/bar, fsync A/bar": A,
    "truncate A/foo; copy A/foo A/bar, fsync A/bar": b"A" * 2500 + b"B" * (INITIAL_SIZE - 2500),
    "truncate A/bar; reflink.range A/foo A/bar, fsync A/bar": b"B" * 2500 + bytes(1596) + b"A" * 4096,
    "creat A/foo; reflink.file A/foo A/bar, fsync A/bar": B,  # an empty source: nothing done
    "creat A/bar; reflink.range A/foo A/bar, fdatasync A/bar": bytes(4096) + b"A" * 4096,
    "write.append A/foo; reflink.file A/foo A/bar, fsync A/bar": A + b"a" * 4096,
}
REFUSED_HERE = ["truncate A/foo; reflink.file A/foo A/bar, sync",  # a partial last block into the middle: EINVAL
                "creat A/foo; reflink.range A/foo A/bar, sync",  # no first block to clone: EINVAL
                "link A/foo A/bar; reflink.file A/foo A/bar, sync",  # one inode: the ranges overlap, EINVAL
                "link A/foo A/bar; copy A/foo A/bar, sync",
                "reflink.file A/foo A/bar, fsync A/foo"]  # the source is unchanged: no point of its own


def model_is_the_hand_worked_one() -> None:
    for text, data in HAND.items():
        assert workload_of(text).trees[-1].inode("A/bar").data == data, text


def test_the_destination_holds_what_the_calls_leave_worked_out_by_hand():
    model_is_the_hand_worked_one()


def test_the_clone_check_catches_a_rule_that_replaces_the_destination_whole(monkeypatch):
    monkeypatch.setattr(reach, "cloned", lambda family, variant, src, dst: src)
    try:
        with pytest.raises(AssertionError):
            model_is_the_hand_worked_one()
    finally:
        forget_counts()  # counted with the wrong rule: no later test in this process may use them


@pytest.mark.parametrize("text", REFUSED_HERE)
def test_a_clone_the_kernel_refuses_with_einval_is_no_workload(text):
    with pytest.raises(UsageError):
        workload_of(text)


@pytest.mark.parametrize("text", ["reflink.file A/foo A/bar, fsync A/bar", "reflink.range A/foo A/bar, fdatasync A/bar"])
def test_a_destinations_fsync_owes_the_cloned_data_where_reflink_is_done_and_the_old_where_refused(text):
    workload = workload_of(text)
    old, new = workload.trees[0].view(), workload.trees[-1].view()
    for fs in ("xfs", "btrfs", "posix"):  # reflink done: the old contents are data-loss
        found = judge(workload, fs, 1, old)
        assert found.verdict == Verdict.DATA_LOSS and "A/bar" in found.reason, (fs, found.reason)
        assert judge(workload, fs, 1, new).verdict == Verdict.CLEAN
    for fs in ("ext4", "f2fs", "xfs-2008", "ext3"):  # refused, not done: the clone's contents are data-loss
        assert on_profile(workload, fs).refused == {"reflink"}
        assert judge(on_profile(workload, fs), oracle.rules_of(fs), 1, new).verdict == Verdict.DATA_LOSS, fs
        assert judge(on_profile(workload, fs), oracle.rules_of(fs), 1, old).verdict == Verdict.CLEAN, fs


def test_copy_is_refused_nowhere_and_reflink_only_where_there_is_no_remap():
    copy = workload_of("copy A/foo A/bar, fsync A/bar")
    assert all(on_profile(copy, fs).refused == frozenset() for fs in ("ext4", "f2fs", "xfs-2008", "f2fs+compress"))
    assert {fs for fs in ("ext4", "xfs", "btrfs", "f2fs", "xfs-2008", "ext3", "btrfs+compress")
            if "reflink" in refusals(fs)} == {"ext4", "f2fs", "xfs-2008", "ext3"}


def test_show_on_ext4_prints_the_reflink_refused(capsys):
    from plugpull import cli
    ident = workload_of("reflink.range A/foo A/bar, fsync A/bar").ident
    assert cli.main(["generate", "--show", ident, "--fs", "ext4"]) == 0
    shown = capsys.readouterr().out
    assert 'reflink -q A/foo 0 4096 4096" A/bar 2>&1) || :; case $pp_said in *"Operation not supported"*)' in shown
    assert "EOPNOTSUPP here: not done" in shown
    assert cli.main(["generate", "--show", ident, "--fs", "xfs"]) == 0
    assert "EOPNOTSUPP" not in capsys.readouterr().out


def host_refuses_reflink(path) -> bool:
    (path / "s").write_bytes(b"x" * 4096)
    (path / "d").write_bytes(b"")
    said = subprocess.run(["xfs_io", "-c", f"reflink -q {path / 's'}", str(path / "d")], capture_output=True, text=True)
    (path / "s").unlink()
    (path / "d").unlink()
    return "Operation not supported" in said.stderr


def refused_on_the_host(tmp_path, workload, cloning) -> dict:
    """Run `workload`'s program as ext4's profile refuses its clone, on the host's filesystem
    (skipped unless it refuses reflink, as ext4 does): it goes on without the clone and leaves
    the refused model's tree, which is returned as seen; `cloning`'s (a profile that expects the
    clone done) fails there on the refusal."""
    __tracebackhide__ = True
    (tmp_path / "work").mkdir()
    if not host_refuses_reflink(tmp_path / "work"):
        pytest.skip("the host's filesystem here does reflink")
    refused = on_profile(workload, "ext4")
    done = run_in(tmp_path / "work", program(refused))
    assert done.returncode == 0, done.stderr
    seen = {p: (e.kind, e.size, e.digest) for p, e in read_tree(tmp_path / "work").items()}
    assert seen == {p: (e.kind, e.size, e.digest) for p, e in refused.trees[-1].view().items()}
    (tmp_path / "again").mkdir()
    failed = run_in(tmp_path / "again", program(cloning))
    assert failed.returncode != 0 and "Operation not supported" in failed.stderr
    return seen


COPIES = ["truncate A/foo; copy A/foo A/bar, fsync A/bar", "copy B/bar A/foo; write.append B/bar, fdatasync-any A/foo"]


@pytest.mark.parametrize("text", COPIES)
def test_copy_leaves_the_models_tree_on_the_host(host_tools, text, tmp_path):
    program_leaves_the_models_tree(text, True, tmp_path)


def test_reflink_refused_on_the_host_leaves_the_refused_models_tree_and_done_where_not_expected_fails(
        host_tools, tmp_path):
    """The host's filesystem (ext4 here) refuses reflink as ext4's profile says: the program
    goes on without it and leaves the model's tree with it not done; run as a filesystem that
    does it would (the profile of xfs), the refusal fails the program."""
    workload = workload_of("reflink.range A/foo A/bar, fsync A/bar; write.append A/bar, sync")
    seen = refused_on_the_host(tmp_path, workload, workload)
    assert seen["A/bar"][2] == digest(B + b"b" * 4096) != workload.trees[-1].entry("A/bar").digest


# --- the model's own states ----------------------------------------------------------------

@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
@pytest.mark.parametrize("seq, k", [(1, 60), (2, 30), (3, 10)])
def test_the_models_own_states_after_the_sixth_tables_steps_are_clean(seq, k, synced):
    assert_own_states_clean(Space(seq, synced=synced), table_block(seq, 6, k, seed=16))
