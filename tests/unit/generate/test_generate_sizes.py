"""The ninth operation table: hole punches at sub-page offsets and over overlapping ranges
(`punch`), a truncate down and up (`resize`), a tiny file and a fallocate past its end (`tiny`),
writes through a mapping of the first and last pages and the msync of one of them (`mmap`,
`msync-head`, `msync-tail`): the offsets and sizes of fstests generic/059, 101, 177, 512 and 325. The ids the first seven tables
gave name the same workloads (pinned by digests of the seven tables' code, seq 1 whole and a
sample of seq 2); the new ones come after them; the data each variant leaves is worked out by
hand, a point's owed data is checked on hand-worked states, and the check is shown to catch a
model that punches whole pages and a ranged msync that owes the whole file. No VM."""

import random
from dataclasses import replace

import pytest
from tests.unit.generate.test_generate_later import host_tools, program_leaves_the_models_tree, \
    reproducers_checks_pass  # noqa: F401
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean

from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.generate import ops, oracle
from plugpull.generate.judge import judge
from plugpull.generate.oracle import PROFILES, on_profile, owed, refusals
from plugpull.generate.ops import SIZE_FAMILIES, Sim, apply, up_to
from plugpull.generate.program import program
from plugpull.generate.space import Space, Workload, ordered_setup, steps_of, workload_of
from plugpull.generate.tree import digest

# the seven tables' ids are pinned by test_generate_again.py (the digests of main's code before both)
GENERIC_059 = "punch.sub-page A/foo; punch.tail A/foo, fsync A/foo"
GENERIC_101 = "resize.down A/foo; resize.up A/foo, fsync A/foo"  # an eighth of its sizes
GENERIC_177 = "punch.last A/foo; punch.past-eof A/foo; punch.to-eof A/foo, fsync A/foo"  # an eighth of its ranges
GENERIC_512 = "creat A/foo; tiny.write A/foo; tiny.falloc A/foo, fsync A/foo"
GENERIC_325 = "mmap.ends A/foo, msync-head A/foo; mmap.remap A/foo, msync-tail A/foo"  # a sixteenth of its file
SETUP = b"A" * 16384  # A/foo as the setup makes it


def test_the_ninth_tables_workloads_come_after_the_earlier_tables():
    before = Space(1, *up_to(8)).total()
    new = [w for w in Space(1, *up_to(9)).workloads() if w.index >= before]  # the tenth table's come after
    assert new and all(w.steps[0].op.family in SIZE_FAMILIES for w in new)
    assert Space(1).workload(before).text() == "punch.sub-page A/foo, sync"
    for text in (GENERIC_059, GENERIC_101):
        assert workload_of(text).index >= Space(2, *up_to(8)).total()
    old = Space(2, ("creat", "falloc", "truncate"), ("fsync", "sync"))
    assert max(w.index for w in old.workloads()) < Space(2, *up_to(8)).total()


def unnumbered(text: str) -> Workload:
    """The workload `text` names, without its id (a seq-3 id costs the whole seq-3 count)."""
    steps, sim = steps_of(text), Sim()
    assert all(apply(sim, step.op, i) for i, step in enumerate(steps, 1)), text
    return Workload(len(steps), 0, steps, ordered_setup(sim.setup))


def data(text: str) -> bytes:
    return unnumbered(text).trees[-1].inode("A/foo").data


def zeroed(buf: bytes, start: int, end: int) -> bytes:
    return buf[:start] + bytes(end - start) + buf[end:]


@pytest.mark.parametrize("text, wanted", [
    ("punch.sub-page A/foo, sync", zeroed(SETUP, 8000, 12096)),  # not the pages it touches: 4096 to 12288
    ("punch.tail A/foo, sync", zeroed(SETUP, 15000, 15100)),
    ("punch.past-eof A/foo, sync", zeroed(SETUP, 8192, 16384)),  # the size kept (KEEP_SIZE)
    (GENERIC_059, zeroed(zeroed(SETUP, 8000, 12096), 15000, 15100)),
    (GENERIC_177, SETUP[:4096] + bytes(12288)),
    ("resize.down A/foo, sync", SETUP[:8192]),
    (GENERIC_101, SETUP[:8192] + bytes(16000 - 8192)),  # the old data past 8192 gone, not back
    ("creat A/foo; tiny.write A/foo, sync", b"b" * 21),
    (GENERIC_512, b"b" * 21 + bytes(80 - 21)),
    ("truncate A/foo; tiny.falloc A/foo, sync", None),  # 2500 bytes: past 40, no tiny fallocate
    (GENERIC_325, b"a" * 4096 + SETUP[4096:12288] + b"a" * 4096),  # the first and last pages; remap writes none
    ("resize.down A/foo; mmap.ends A/foo, sync", b"b" * 8192),
    ("resize.down A/foo; resize.up A/foo; mmap.ends A/foo, sync", None),  # 16000 bytes: not whole pages
])
def test_each_variant_leaves_the_data_worked_out_by_hand(text, wanted):
    if wanted is None:
        with pytest.raises(AssertionError):
            unnumbered(text)
        return
    assert data(text) == wanted


@pytest.mark.parametrize("text", [
    "resize.down A/foo; punch.last A/foo, sync",  # 8 KiB: the punch at 12 KiB is past the end
    "resize.up A/foo, sync",  # 16 KiB is not below 16000
    "resize.down A/foo; resize.down A/foo, sync",  # not down
    "tiny.write A/foo, sync",  # the setup's file is not empty
    "creat A/foo; resize.down A/foo, sync",
    "mmap.remap A/foo, sync",  # the remap is there to msync a page
    "mmap.ends A/foo, msync A/foo",  # the whole mapping's msync follows the second table's mmapwrite
    "write.overwrite A/foo; mmap.remap A/foo, fsync A/foo",
])
def test_a_variant_that_would_do_nothing_or_the_other_way_is_no_workload(text):
    with pytest.raises(UsageError):
        workload_of(text)


def test_the_program_runs_each_through_xfs_io():
    text = program(unnumbered(GENERIC_512))
    assert '\nxfs_io -c "pwrite -q -S 0x62 0 21" A/foo\n' in text
    assert 'pp_said=$(xfs_io -c "falloc 40 40" A/foo 2>&1) && [ -z "$pp_said" ]' in text
    assert 'xfs_io -c "fpunch 15000 100" A/foo' in program(workload_of(GENERIC_059))
    assert '\nxfs_io -c "truncate 16000" A/foo\n' in program(workload_of(GENERIC_101))
    assert ('\nxfs_io -c "mmap -w 0 16384" -c "mwrite -S 0x61 0 4096" -c "mwrite -S 0x61 12288 4096" '
            '-c "msync -s 0 4096" A/foo\n# point 1: msync-head A/foo, done by the command above\n'
            'pp_acked 1\n# 2: mmap.remap A/foo\nxfs_io -c "mmap -w 0 16384" -c "msync -s 12288 4096" A/foo\n'
            ) in program(workload_of(GENERIC_325))


@pytest.mark.parametrize("text, synced", [
    (GENERIC_059, True), (GENERIC_101, False), ("punch.past-eof A/foo; punch.to-eof A/foo, fsync A/foo", True),
    ("creat A/foo; tiny.write A/foo, fsync A/foo", True), ("creat A/foo; tiny.falloc A/foo, fsync A/foo", False),
    ("resize.down A/foo; punch.tail B/bar, sync", True), (GENERIC_325, True), (GENERIC_325, False)])
def test_the_program_leaves_the_models_tree_on_the_host(host_tools, text, synced, tmp_path):
    program_leaves_the_models_tree(text, synced, tmp_path)


@pytest.mark.parametrize("text", ["punch.last A/foo; punch.past-eof A/foo, fsync A/foo", GENERIC_325])
def test_the_reproducers_steps_run_and_its_checks_pass_on_the_host(host_tools, text, tmp_path):
    reproducers_checks_pass(text, tmp_path)


def file_state(text: str, contents: bytes) -> dict:
    """The workload's last tree with A/foo holding `contents` (a state worked out by hand)."""
    view = dict(unnumbered(text).trees[-1].view())
    view["A/foo"] = replace(view["A/foo"], size=len(contents), digest=digest(contents))
    return view


def owes_the_bugs_data(text: str, done: bytes, lost: bytes) -> None:
    """After the fsync, `done` (the data worked out by hand) is clean on every profile and `lost`
    (the data as it was before the operations: the bug's state) is data-loss; before the fsync
    both are clean."""
    workload = unnumbered(text)
    for fs in PROFILES:
        assert judge(workload, fs, 1, file_state(text, done)).verdict == Verdict.CLEAN, fs
        assert judge(workload, fs, 1, file_state(text, lost)).verdict == Verdict.DATA_LOSS, fs
        assert judge(workload, fs, 0, file_state(text, lost)).verdict == Verdict.CLEAN, fs


@pytest.mark.parametrize("text, done, lost", [
    (GENERIC_059, zeroed(zeroed(SETUP, 8000, 12096), 15000, 15100), SETUP),  # the punches lost (059)
    (GENERIC_059, zeroed(zeroed(SETUP, 8000, 12096), 15000, 15100), zeroed(SETUP, 8000, 12096)),  # the second
    (GENERIC_101, SETUP[:8192] + bytes(7808), SETUP[:16000]),  # the old data back in the hole (101)
    (GENERIC_177, SETUP[:4096] + bytes(12288), zeroed(SETUP, 8192, 16384)),  # the last punch lost (177)
])
def test_the_fsync_owes_the_data_each_variant_leaves(text, done, lost):
    owes_the_bugs_data(text, done, lost)


def test_the_fsync_of_a_tiny_file_owes_the_fallocated_size():
    """generic/512: the size the fallocate past the end gave, 80, is owed; 21 is data-loss."""
    workload = unnumbered(GENERIC_512)
    state = dict(workload.trees[-1].view())
    for fs in PROFILES:
        assert judge(workload, fs, 1, state).verdict == Verdict.CLEAN, fs
        short = {**state, "A/foo": replace(state["A/foo"], size=21, digest=digest(b"b" * 21))}
        assert judge(workload, fs, 1, short).verdict == Verdict.DATA_LOSS, fs


def test_the_check_catches_a_sub_page_punch_modelled_as_page_aligned(monkeypatch):
    """A wrong model: the punch zeroes every page it touches (4096 to 12288, not 8000 to 12096)."""
    real = ops.sized_data

    def whole_pages(family, variant, data, fill):
        out = real(family, variant, data, fill)
        if family == "punch":
            start, length = ops.PUNCHES[variant]
            start, end = start // 4096 * 4096, min(-(-(start + length) // 4096) * 4096, len(data))
            out = data[:start] + bytes(end - start) + data[end:]
        return out

    monkeypatch.setitem(ops.MODELS, "punch", whole_pages)  # the model of the ninth table's punch
    on_profile.cache_clear()
    try:
        with pytest.raises(AssertionError):
            owes_the_bugs_data(GENERIC_059, zeroed(zeroed(SETUP, 8000, 12096), 15000, 15100), SETUP)
    finally:
        on_profile.cache_clear()


def test_punch_is_refused_where_fallocates_punch_hole_is_and_the_rest_nowhere():
    assert "punch" in refusals("f2fs+compress") and "falloc.punch-hole" in refusals("f2fs+compress")
    assert not {"punch", "resize", "tiny"} & refusals("f2fs+compress") - {"punch"}
    for fs in (*PROFILES, "xfs-2008", "ext3"):
        assert not {"punch", "resize", "tiny"} & refusals(fs), fs
    refused = on_profile(workload_of(GENERIC_059), "f2fs+compress")
    assert refused.refused == {"punch"} and refused.trees[-1] == refused.trees[0]
    assert program(refused).count('*"Operation not supported"*') == 2
    punched = zeroed(zeroed(SETUP, 8000, 12096), 15000, 15100)
    assert judge(refused, "f2fs", 1, file_state(GENERIC_059, SETUP)).verdict == Verdict.CLEAN
    assert judge(refused, "f2fs", 1, file_state(GENERIC_059, punched)).verdict == Verdict.DATA_LOSS


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
def test_the_models_own_states_after_the_ninth_tables_steps_are_clean(synced):
    space, earlier = Space(2, synced=synced), 8  # the tenth table's come after the ninth's
    first = Space(1, *up_to(earlier)).total()
    assert_own_states_clean(Space(1, synced=synced), range(first, Space(1, *up_to(9)).total()))
    block = range(Space(2, *up_to(earlier)).total(), Space(2, *up_to(9)).total())
    assert_own_states_clean(space, sorted(random.Random(19).sample(block, 40)))


HEAD, TAIL = b"a" * 4096 + SETUP[4096:], SETUP[:12288] + b"a" * 4096  # one of the two pages written


def owes_the_synced_page(at: int, state: bytes, wanted: str) -> None:
    """generic/325's workload: after point `at`, A/foo holding `state` is `wanted` on every profile."""
    workload = workload_of(GENERIC_325)
    for fs in PROFILES:
        assert judge(workload, fs, at, file_state(GENERIC_325, state)).verdict == wanted, (fs, at)


@pytest.mark.parametrize("at, state, wanted", [
    (1, HEAD, Verdict.CLEAN),  # the head synced, the tail page not yet: msync-head owes it nothing
    (1, SETUP, Verdict.DATA_LOSS),  # the head lost
    (1, TAIL, Verdict.DATA_LOSS),
    (2, HEAD, Verdict.DATA_LOSS),  # generic/325's loss: the tail page lost after its own msync
    (2, data(GENERIC_325), Verdict.CLEAN),
    (0, SETUP, Verdict.CLEAN),
])
def test_a_ranged_msync_owes_its_page_and_nothing_of_the_other(at, state, wanted):
    owes_the_synced_page(at, state, wanted)


def test_the_check_catches_a_ranged_msync_that_owes_the_whole_file(monkeypatch):
    """A wrong rule: msync of one page taken for msync of the whole mapping (msync-data)."""
    whole = next(r for r in oracle.RULES if r.name == "msync-data")
    wrong = tuple(replace(r, owes=whole.owes) if r.name == "msync-range-data" else r for r in oracle.RULES)
    monkeypatch.setattr(oracle, "RULES", wrong)
    with pytest.raises(AssertionError):
        owes_the_synced_page(1, HEAD, Verdict.CLEAN)


def test_ext4s_rename_rule_takes_no_ranged_msync_for_the_files_data_made_durable():
    """An append before a mapping whose head alone was msynced, then a rename over another
    file: what was written since the data was last durable includes the mmap write, which
    nothing forces out, so ext4's replace-via-rename owes nothing."""
    workload = unnumbered("write.append A/foo; mmap.ends A/foo, msync-head A/foo; rename.over A/foo A/bar, fsync A")
    assert [o for o in owed(workload, "ext4", 2) if o.rule == "ext4-replace-via-rename"] == []


def test_a_step_after_one_the_filesystem_refuses_is_modelled_as_the_program_runs_it():
    """A refused step leaves the file at a size the workload did not plan (btrfs refuses the
    collapse: 16 KiB, not 12); the ninth table's operations after it still run (the same
    ftruncate), and the model does them as they run, so the workload is judged on that
    filesystem instead of failing as invalid."""
    workload = workload_of("collapse B/foo; resize.up B/foo, fsync B/foo")
    before, after = (tree.inode("B/foo").data for tree in on_profile(workload, "btrfs").trees[1:])
    assert len(before) == 16384 and not ops.fits(workload.steps[1].op, len(before))  # not as planned
    assert after == b"C" * 16000  # the truncate shrinks it
