"""Generated workloads: the space's counts and ids are stable, ids turn back into the same
workloads, sampling is deterministic, filters keep the whole space's ids, and `plugpull
generate` says bad input in one line with exit code 2. No VM."""

import hashlib
import os
import random
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from plugpull import cli
from plugpull.errors import UsageError
from plugpull.generate.ops import CORE_OPS, FALLOCS, FIRST_FAMILIES, FIRST_PERSISTENCE, INITIAL_SIZE, TRUNCATE_TO, \
    FAMILIES, PERSISTENCE, WRITES, up_to
from plugpull.generate.program import program
from plugpull.generate.space import Space, space_of, workload_of

GOLDEN = Path(__file__).parents[2] / "golden"
COUNTS = {1: 356, 2: 119036, 3: 33156268}  # the first table's: changes every id if it moves
TWO_TABLES_COUNTS = {1: 412, 2: 167644, 3: 58557564}  # with the direct-I/O and mmap writes and msync
THREE_TABLES_COUNTS = {1: 416, 2: 169438, 3: 59028516}  # and rmdir
FOUR_TABLES_COUNTS = {1: 476, 2: 231962, 3: 99018204}  # and fallocate at the end of the file, collapse and insert
FIVE_TABLES_COUNTS = {1: 539, 2: 300637, 3: 147255276}  # and the nested directory
SIX_TABLES_COUNTS = {1: 1038, 2: 1505275}  # and eviction, reflink, copy, the points of any name (seq 3: 2234643969,
# not walked again here: docs/generate.md)
SEVEN_TABLES_COUNTS = {1: 1046, 2: 1520311}  # and unlink-open with the points of the file it holds open (seq 3:
# 2259751689, not walked again here: docs/generate.md)
EIGHT_TABLES_COUNTS = {1: 1056, 2: 1539102}  # and again, a point right after the last one (seq 3: 2299631520)
NINE_TABLES_COUNTS = {1: 1212, 2: 2081032}  # and the ninth table's other offsets and sizes (seq 3: 3726363176)
TEN_TABLES_COUNTS = {1: 1380, 2: 2738122}  # and the tenth table's third name, nested links, moved directory (seq 3:
# 5700755330)
ELEVEN_TABLES_COUNTS = {1: 1420, 2: 2916718}  # and the eleventh table's clone within one file (seq 3:
# 6309609362)
TWELVE_TABLES_COUNTS = {1: 1425, 2: 2947163}  # and the twelfth table's btrfs snapshots (seq 3: 6429308082)
FOURTEEN_TABLES_COUNTS = {1: 1466, 2: 3141549}  # and the thirteenth's O_TMPFILE, the fourteenth's holes (seq 3:
# 7133436316)
FIFTEEN_TABLES_COUNTS = {1: 1481, 2: 3210932}  # and the fifteenth's fourth name (seq 3: 7381572769)
WHOLE_COUNTS = {1: 1488, 2: 3249207, 3: 7531532947}  # and the sixteenth's clone of a hole and quota enable


def first_table(seq: int) -> Space:
    return Space(seq, FIRST_FAMILIES, FIRST_PERSISTENCE)


def table_digest() -> str:
    rows = [op.text() for op in CORE_OPS] + [str(sorted((k, v[1]) for k, v in WRITES.items())),
                                             str(sorted(FALLOCS.items())), str((INITIAL_SIZE, TRUNCATE_TO))]
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def test_the_operation_table_is_pinned():
    """Ids are ranks in this table's enumeration: a changed table is a changed id for every workload."""
    assert len(CORE_OPS) == 96
    assert table_digest() == "36f1125817d4560f"


@pytest.mark.parametrize("seq", sorted(COUNTS))
def test_counts_are_stable(seq):
    assert first_table(seq).total() == COUNTS[seq]
    assert Space(seq, *up_to(2)).total() == TWO_TABLES_COUNTS[seq]
    assert Space(seq, *up_to(3)).total() == THREE_TABLES_COUNTS[seq]
    assert Space(seq, *up_to(4)).total() == FOUR_TABLES_COUNTS[seq]
    assert Space(seq, *up_to(5)).total() == FIVE_TABLES_COUNTS[seq]
    assert seq not in SIX_TABLES_COUNTS or Space(seq, *up_to(6)).total() == SIX_TABLES_COUNTS[seq]
    assert seq not in SEVEN_TABLES_COUNTS or Space(seq, *up_to(7)).total() == SEVEN_TABLES_COUNTS[seq]
    assert seq not in EIGHT_TABLES_COUNTS or Space(seq, *up_to(8)).total() == EIGHT_TABLES_COUNTS[seq]
    assert seq not in NINE_TABLES_COUNTS or Space(seq, *up_to(9)).total() == NINE_TABLES_COUNTS[seq]
    assert seq not in TEN_TABLES_COUNTS or Space(seq, *up_to(10)).total() == TEN_TABLES_COUNTS[seq]
    assert seq not in ELEVEN_TABLES_COUNTS or Space(seq, *up_to(11)).total() == ELEVEN_TABLES_COUNTS[seq]
    assert seq not in TWELVE_TABLES_COUNTS or Space(seq, *up_to(12)).total() == TWELVE_TABLES_COUNTS[seq]
    assert seq not in FOURTEEN_TABLES_COUNTS or Space(seq, *up_to(14)).total() == FOURTEEN_TABLES_COUNTS[seq]
    assert Space(seq).count() == Space(seq).total() == WHOLE_COUNTS[seq]
    assert Space(seq, synced=False).count() == WHOLE_COUNTS[seq]  # the setup changes no operation's validity


def test_counting_agrees_with_listing():
    assert sum(1 for _ in Space(1).workloads()) == 1488
    assert [w.index for w in first_table(1).workloads()] == list(range(356))  # the first table's ids come first
    space = Space(2, families=("link", "unlink", "rename"), persistence=("fsync",))
    listed = [w.index for w in space.workloads()]
    assert len(listed) == space.total() == 10624
    assert listed == sorted(set(listed))
    assert all(space.index_of(r) == listed[r] for r in (0, 1, 500, len(listed) - 1))


@pytest.mark.parametrize("seq", sorted(COUNTS))
@pytest.mark.parametrize("end", ["first", "last"])
def test_first_and_last_programs_match_golden(seq, end):
    index = 0 if end == "first" else COUNTS[seq] - 1
    text = program(Space(seq).workload(index))
    path = GOLDEN / f"generate-seq{seq}-{end}.sh"
    if os.environ.get("PLUGPULL_REGEN_GOLDEN"):
        path.write_text(text)
    assert path.is_file(), f"no golden file {path.name}: run with PLUGPULL_REGEN_GOLDEN=1"
    assert text == path.read_text()


def test_an_id_names_the_workload_it_was_listed_as():
    """A listing filtered to operations of the first, fourth, fifth and sixth tables gives ids of
    every block of the whole space; the whole listing's digest is make test-all's."""
    space, listing = Space(2), Space(2, families=("rename", "nested", "reflink", "evict"))
    listed = [w for w in listing.workloads() if w.index % 997 == 0]
    assert len(listed) > 150 and max(w.index for w in listed) > 300637  # into the sixth table's block
    for workload in listed:
        assert space.workload(workload.index) == workload
        assert space.parse(workload.ident) == workload
    assert space.workload(412).ident == "seq2-000412"
    assert space.workload(412).text() == "creat A/foo, sync; falloc.keep-size B/bar, sync"


def test_a_workload_is_found_by_its_text():
    for space in (Space(1), Space(2), Space(3)):
        for index in space.sample(5, seed=4):
            workload = space.workload(index)
            assert workload_of(workload.text()) == workload
    with pytest.raises(UsageError):
        workload_of("unlink A/foo, sync; unlink A/foo, sync")  # no longer there
    with pytest.raises(UsageError):
        workload_of("creat A/foo")  # the last operation needs a persistence point
    with pytest.raises(UsageError):
        workload_of("creat A/foo, fsync")


def test_every_workload_ends_with_a_persistence_point_and_replays_on_its_setup():
    for workload in Space(2, families=("mkdir", "link", "rename")).workloads():
        assert workload.steps[-1].persist is not None
        assert len(workload.trees) == 3  # raises if a step is invalid on the setup it names
    space = Space(2)
    for index in space.sample(100, seed=5):
        assert len(space.workload(index).trees) == 3
    rng, space = random.Random(5), Space(3)
    for index in rng.sample(range(COUNTS[3]), 50):
        workload = space.workload(index)
        assert workload.steps[-1].persist is not None and len(workload.trees) == 4


def test_invalid_sequences_are_pruned():
    texts = {w.text() for w in Space(2, families=("unlink", "write", "creat")).workloads()}
    assert "unlink A/foo, sync; write.append A/foo, sync" not in texts  # written after it is gone
    assert "creat A/foo, sync; creat A/foo, sync" not in texts  # created twice
    assert "unlink A/foo, sync; creat A/foo, sync" in texts
    removes = {w.text() for w in Space(1, families=("removexattr",)).workloads()}
    assert removes == set()  # nothing to remove on a fresh file


def test_sampling_is_deterministic():
    space = Space(3)
    first = space.sample(20, seed=7)
    assert first == space.sample(20, seed=7) == sorted(first) and len(set(first)) == 20
    assert first != space.sample(20, seed=8)
    assert Space(1).sample(2000, seed=1) == list(range(1488))  # all of them, when K is more
    assert first_table(2).sample(20, seed=7) == [4914, 6328, 7602, 9156, 9494, 11265, 12337, 19772, 28140, 31544,
                                                 42445, 47931, 51750, 54810, 56838, 66510, 70239, 76387, 85319,
                                                 107646]  # as drawn before the later operations


def test_a_filtered_sample_keeps_to_the_filter():
    space, whole = Space(2, families=("rename", "link"), persistence=("fsync", "fdatasync")), Space(2)
    for index in space.sample(10, seed=3):
        workload = whole.workload(index)
        assert {s.op.family for s in workload.steps} <= {"rename", "link"}
        assert {s.persist.kind for s in workload.steps if s.persist} <= {"fsync", "fdatasync"}


@pytest.mark.parametrize("bad", ["seq4-000001", "seq1-", "seq2-12x", "seq1-001488", "seq1z-000001", "x"])
def test_a_bad_id_is_refused(bad):
    with pytest.raises(UsageError):
        space_of(bad).parse(bad)


def run(argv, capsys):
    return run_cli(["generate", *argv], capsys)


@pytest.mark.parametrize("argv", [["--seq", "0"], ["--seq", "4"], ["--seq", "x"], ["--seq", "1", "--ops", "frob"],
                                  ["--show", "seq9-000001"], ["--seq", "1", "--show", "seq1-001488"],
                                  ["--seq", "1", "--show", "seq2-000001"], ["--show", "nonsense"], [],
                                  ["--seq", "1", "--sample", "-2"], ["--owed", "seq1-000001", "--fs", "zfs"],
                                  ["--seq", "1", "--ops"]])
def test_bad_input_exits_2_in_one_line(argv, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_commands_print(capsys):
    assert run(["--seq", "2"], capsys)[1] == "seq 2: 3249207 workloads of 3249207\n"
    code, out, _ = run(["--seq", "1", "--list", "--ops", "mkdir,fsync"], capsys)
    assert code == 0 and out.splitlines() == ["seq1-000017  mkdir A, fsync A", "seq1-000018  mkdir A, fsync .",
                                              "seq1-000020  mkdir B, fsync B", "seq1-000021  mkdir B, fsync ."]
    sampled = run(["--seq", "3", "--sample", "5", "--seed", "2"], capsys)[1]
    assert sampled == run(["--seq", "3", "--sample", "5", "--seed", "2", "--list"], capsys)[1]
    assert len(sampled.splitlines()) == 5
    assert run(["--show", "seq2-000412"], capsys)[1] == program(Space(2).workload(412))
    owed = run(["--owed", "seq2-000412", "--fs", "xfs"], capsys)[1]
    assert "fsync-names" in owed and "ext4-replace-via-rename" not in owed


class Booted(BaseException):
    """Raised where a guest would boot: a BaseException, so no handler of plugpull's turns it
    into an exit code, and no crash before the boot passes for it."""


def _no_boot(*args, **kwargs):
    raise Booted


@pytest.fixture
def no_guest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cli.crash, "prepare_rig", _no_boot)
    monkeypatch.setattr("plugpull.guest.image.build.build_image", _no_boot)
    return tmp_path


@pytest.mark.parametrize("argv, said", [
    (["--workload", "gen:x"], "argument --workload: bad workload id 'x': expected seqN-NNNNNN"),
    (["--workload", "gen:seq1-001488"], "argument --workload: no workload seq1-001488: seq 1 has 1488"),
    (["--workload", "gen:seq1-000001", "--param", "count=3"], "gen:seq1-000001 takes no --param"),
    (["--workload", "gen:seq1-000001", "--check-script", "c.sh"],
     "--check-script is for a script:PATH workload, not gen:seq1-000001"),
], ids=["bad-id", "past-the-last", "param", "check-script"])
def test_crash_refuses_a_bad_generated_workload_in_one_line(argv, said, no_guest, capsys):
    code, _, err = run_cli(["crash", "--fs", "xfs", *argv], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and said in err, err
    assert list(no_guest.iterdir()) == [], "a refused run created something"


def test_crash_takes_a_generated_workload_judged_by_the_filesystems_rules(no_guest, capsys):
    from plugpull.crash.spec import CrashSpec
    from plugpull.generate.workload import GeneratedWorkload
    with pytest.raises(Booted):
        cli.main(["crash", "--fs", "btrfs", "--workload", "gen:seq2-014532", "--trigger", "end"])
    assert capsys.readouterr().err == ""  # nothing refused or failed before the boot
    plan = CrashSpec(fs="btrfs", mode="barrier", workload="gen:seq2-014532").resolve()
    assert plan.workload == GeneratedWorkload("seq2-014532", "btrfs", "btrfs")
    assert CrashSpec(fs="xfs-2008", mode="barrier", workload="gen:seq1-000001").resolve().workload.profile == "posix"
    assert "pp_acked 2" in plan.workload.script("/mnt")
    with pytest.raises(UsageError):
        GeneratedWorkload("seq1-000001", "zfs")


def test_a_record_of_a_generated_workload_names_it_again():
    from plugpull.crash.spec import recorded_workload
    from plugpull.generate.workload import GeneratedWorkload
    gen = GeneratedWorkload("seq2-014532", "xfs")
    assert recorded_workload(gen.name, gen.params()) == gen  # what record.json keeps: name and params
    assert recorded_workload("fsync-files", {"count": 3}).name == "fsync-files"
    with pytest.raises(UsageError):
        recorded_workload("gen", {"ident": "seq1-999999", "profile": "xfs"})


def test_ops_alone_lists_each_name_by_table_with_its_operations_and_seq1_workloads(capsys):
    lines = run(["--ops"], capsys)[1].splitlines()
    assert lines[0].split() == ["table", "name", "kind", "operations", "seq", "1"]
    rows = {line.split()[1]: line.split() for line in lines[1:]}
    assert rows["creat"] == ["1", "creat", "operation", "4", str(Space(1, ("creat",), PERSISTENCE).total())]
    assert rows["third"] == ["10", "third", "operation", "14", "80"]
    assert rows["nested-link"][3:] == ["8", "68"] and rows["move-dir"][3:] == ["6", "20"]
    assert rows["msync-head"] == ["9", "msync-head", "point", "8"]
    assert rows["self-clone"] == ["11", "self-clone", "operation", "8", "40"]
    assert rows["tmpfile"] == ["13", "tmpfile", "operation", "2", "6"]
    assert rows["fourth"] == ["15", "fourth", "operation", "3", "15"]
    assert len(rows) == len(FAMILIES) + len(PERSISTENCE)
