"""[replay] cases (a kept record, one state) and [expect] verdicts: the fields are checked and
named, a missing record is refused before any guest boots, and an expectation can fail."""

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from tests.case_files import write_case
from plugpull.errors import UsageError
from plugpull.powerloss.variation import variation
from plugpull.powerloss.writelog import LogWriter, iter_entries
from plugpull.results import CellResult, CrashSummary
from plugpull.runs.cases import CaseError, expectation_failures, load_case, replay_failures
from plugpull.runs.replaycase import load_replay

CASE = """title = "t"
[replay]
record = "rec"
model = "reorder"
cut = 4
seed = 1
[expect]
verdicts = {barrier = "unmountable"}
"""


def kept_record(where: Path) -> Path:
    """A saved record as `plugpull crash` keeps it: flushed write, flush, three volatile writes."""
    where.mkdir(parents=True)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(where / "base.qcow2"), "1M"], check=True)
    log = where / "write.log"
    with LogWriter(log) as w:
        w.write(0, b"\1" * 512)
        w.flush()
        for sector in (8, 16, 24):
            w.write(sector, b"\2" * 512)
    with open(log, "rb") as src, gzip.open(where / "write.log.gz", "wb") as dst:
        dst.write(src.read())
    log.unlink()
    (where / "record.json").write_text(json.dumps(
        {"fs": "xfs", "mode": "barrier", "workload": "bonnie", "params": {"files_k": 1}, "acks": []}))
    return where


@pytest.fixture
def case_dir(tmp_path) -> Path:
    kept_record(tmp_path / "rec")
    return tmp_path


def test_a_replay_case_reads_its_record(case_dir):
    case = load_case(write_case(case_dir, CASE))
    assert case.cells == () and case.replay.mode == "barrier"
    assert (case.replay.model, case.replay.cut, case.replay.seed) == ("reorder", 4, 1)
    assert case.verdicts == (("barrier", "unmountable"),)
    assert "reorder cut 4" in case.replay.describe()


@pytest.mark.parametrize("change, field", [
    (('model = "reorder"', 'model = "bogus"'), "[replay] model"),
    (("cut = 4", "cut = -1"), "[replay] cut"),
    (("cut = 4", 'cut = "4"'), "[replay] cut"),
    (("seed = 1", 'seed = "one"'), "[replay] seed"),
    (("seed = 1", "seed = 1\ncolour = 1"), "[replay] colour"),
    (("seed = 1", 'seed = 1\nreference = "half"'), "[replay] reference"),
    (("seed = 1", "seed = 1\nculprits = [2]"), "[replay] reference"),
    (("seed = 1", 'seed = 1\nreference = "prefix"'), "[replay] culprits"),
    (("seed = 1", 'seed = 1\ndigest = "abc"'), "[replay] digest"),
    (('record = "rec"', ""), "[replay] record"),
    (('record = "rec"', 'record = "nowhere"'), "no such record directory"),
    (("[expect]", "[crash]\nstates = 3\n[expect]"), "[crash]: not used by a [replay] case"),
    (("barrier = ", "nobarrier = "), "[expect] verdicts.nobarrier"),
    (('"unmountable"', '"broken"'), "[expect] verdicts.barrier"),
    (("[expect]", '[matrix]\nfs = ["xfs"]\nmodes = ["barrier"]\nworkloads = ["bonnie"]\n[expect]'),
     "[replay]: a case rechecks a kept record or runs a [matrix] or [faults], not both"),
])
def test_a_bad_replay_field_is_named(case_dir, change, field):
    text = CASE.replace(*change)
    assert text != CASE
    with pytest.raises(CaseError) as e:
        load_case(write_case(case_dir, text))
    assert field in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("missing", ["record.json", "base.qcow2", "write.log.gz"])
def test_a_record_without_its_files_is_refused(case_dir, missing):
    (case_dir / "rec" / missing).unlink()
    with pytest.raises(CaseError, match=f"no {missing} in it"):
        load_case(write_case(case_dir, CASE))


def test_the_minimised_plan_is_the_reference_with_its_culprits(case_dir, tmp_path):
    """Under `prefix` every volatile write persists: the culprit is one of them."""
    text = CASE.replace("seed = 1", 'seed = 1\nreference = "drop-unflushed"\nculprits = [3]')
    case = load_case(write_case(case_dir, text.replace('"reorder"', '"prefix"')))
    doc, rec, pieces = load_replay(case.replay, tmp_path / "scratch")
    entries = list(iter_entries(rec.log))
    assert pieces == variation(entries, 4, "prefix", 1).pieces("drop-unflushed", [3])
    assert [p.entry_index for p in pieces] == [0, 3]
    assert (doc["fs"], doc["model"], doc["cut"]) == ("xfs", "prefix", 4)


@pytest.mark.parametrize("change, message", [
    (("cut = 4", "cut = 9"), "outside the record's log"),
    (("seed = 1", 'seed = 1\nreference = "drop-unflushed"\nculprits = [0]'), "not volatile writes"),
])
def test_a_state_the_record_cannot_make_is_refused(case_dir, tmp_path, change, message):
    case = load_case(write_case(case_dir, CASE.replace(*change)))
    with pytest.raises(UsageError, match=message):
        load_replay(case.replay, tmp_path / "scratch")


def test_a_replay_expectation_can_fail(case_dir):
    case = load_case(write_case(case_dir, CASE.replace("[expect]", '[expect]\nunsafe = ["barrier"]')))
    assert replay_failures(case, "unmountable") == []
    assert replay_failures(case, "fs-corrupt") == ["barrier: expected unmountable, it is fs-corrupt"]
    assert len(replay_failures(case, "clean")) == 2


def cell(unmountable: int) -> CellResult:
    crash = CrashSummary(states=10, clean=10 - unmountable, data_loss=0, fs_corrupt=0, unmountable=unmountable,
                         infra_error=0)
    return CellResult(key="xfs/barrier/bonnie/0", fs="xfs", mode="barrier", workload="bonnie", crash=crash)


def test_a_matrix_case_can_expect_a_verdict(tmp_path):
    case = load_case(write_case(tmp_path, 'title = "t"\n[matrix]\nfs = ["xfs"]\nmodes = ["barrier"]\n'
                                     'workloads = ["bonnie"]\n[expect]\nverdicts = {barrier = "unmountable"}\n'))
    assert expectation_failures(case, [cell(2)]) == []
    assert expectation_failures(case, [cell(0)]) == ["barrier: expected a state judged unmountable, saw none"]
    assert expectation_failures(case, []) == ["barrier: expected a state judged unmountable, saw none"]


def saved_state(tmp_path: Path, digest: str | None = None) -> Path:
    """A crash run's artifact: its record, saved, and a reorder state cut at 3 pointing at it."""
    from plugpull.crash.record import Record
    from plugpull.crash.artifacts import save_record
    from plugpull.runs.keeprecord import state_digest

    work = tmp_path / "rec-raw"
    work.mkdir(parents=True)
    subprocess.run(["truncate", "-s", "1M", str(work / "base.img")], check=True)
    with LogWriter(work / "write.log") as w:
        for sector in (0, 8):
            w.write(sector, b"\1" * 512)
        w.flush()
        for sector in (16, 24, 32):
            w.write(sector, b"\3" * 1024)
    rec = Record(work, {"fs": "xfs", "mode": "barrier", "workload": "bonnie", "params": {"files_k": 1},
                        "log": {"entries": 6}}, [])
    rec.save()
    save_record(rec, tmp_path / "run" / "record")
    state = tmp_path / "run" / "states" / "s"
    state.mkdir(parents=True)
    digest = digest or state_digest(rec, "reorder", 5, 1, tmp_path / "probe.img")
    (state / "state.json").write_text(json.dumps(
        {"fs": "xfs", "model": "reorder", "cut": 5, "seed": 1, "digest": digest, "verdict": "unmountable",
         "record": "../../record"}))
    return state


def test_a_kept_record_is_the_original_cut_at_the_state(tmp_path):
    from plugpull.crash.artifacts import load_record
    from plugpull.runs.keeprecord import keep_record

    fields = keep_record(saved_state(tmp_path), tmp_path / "kept", tmp_path / "scratch")
    assert (fields["model"], fields["cut"], fields["seed"]) == ("reorder", 5, 1)
    kept = load_record(tmp_path / "kept", tmp_path / "unpacked")
    assert [e.index for e in iter_entries(kept.log)] == [0, 1, 2, 3, 4]
    assert kept.meta["kept"]["cut_at"] == 5 and kept.meta["log"]["entries"] == 5
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["base.qcow2", "record.json", "write.log.gz"]


def test_a_record_that_does_not_rebuild_the_state_is_not_kept(tmp_path):
    from plugpull.errors import InfraError
    from plugpull.runs.keeprecord import keep_record

    with pytest.raises(InfraError, match="not the saved state's"):
        keep_record(saved_state(tmp_path, digest="0" * 64), tmp_path / "kept", tmp_path / "scratch")
    assert not (tmp_path / "kept").exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises(UsageError, match="never replaced"):
        keep_record(saved_state(tmp_path / "again"), tmp_path / "kept", tmp_path / "scratch2")


def answer(verdict: str, digest: str = "a" * 64) -> dict:
    return {"digest": digest, "digest_expected": "a" * 64, "verdict": verdict,
            "reason": "recovery mount failed: Structure needs cleaning",
            "kernel": "[ 1.0] XFS (sda): failed to locate log tail\n[ 1.1] sd 0:0:0:0: [sda] ok\n"}


@pytest.mark.parametrize("r, code, said", [
    (answer("unmountable"), 0, "reproduced"),
    (answer("clean"), 1, "not reproduced: barrier: expected unmountable, it is clean"),
    (answer("unmountable", digest="b" * 64), 1, "not reproduced: the rebuilt state differs"),
    (answer("infra-error"), 3, "verdict infra-error"),
])
def test_reproduce_says_and_exits_as_the_replay_bears_out_the_case(case_dir, capsys, r, code, said):
    from plugpull.cli.reproduce import _replayed

    case = load_case(write_case(case_dir, CASE.replace("seed = 1", f'seed = 1\ndigest = "{"a" * 64}"')))
    assert _replayed(case, r) == code
    out = capsys.readouterr().out
    assert said in out and "  XFS (sda): failed to locate log tail" in out and "[sda] ok" not in out


def test_only_the_filesystems_own_kernel_lines_are_shown():
    from plugpull.cli.reproduce import fs_lines

    log = ("[ 1.0]  xfs_log_mount+0xfb/0x220 [xfs]\n[ 1.1] XFS (sda): log mount failed\n"
           "[ 2.0] EXT4-fs (sdb): mounted\n[ 3.0] sd 0:0:0:0: [sda] ok")
    assert fs_lines(log, "xfs") == ["XFS (sda): log mount failed"]
    assert fs_lines(log, "ext4") == ["EXT4-fs (sdb): mounted"]
