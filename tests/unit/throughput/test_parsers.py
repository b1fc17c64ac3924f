"""Parsers of benchmark output, on real captures from the guest (tests/data, see its README)
and on the exact lines of seed 003."""

import json
import re
import subprocess
from pathlib import Path

import pytest

from plugpull.guest.image.build import IMAGES_DIR, compile_static
from plugpull.throughput.parsers import (MIB, SMALLFILES_PHASES, Phase, parse_bonnie, parse_fio,
                              parse_smallfiles)

DATA = Path(__file__).resolve().parents[2] / "data"

# The result lines of seed 003 (xfs mailing list, 2008-04-11), as the seed has them.
SEED_003 = """\
mkfs.xfs -f -l logdev=/dev/sdb1,size=134217728 /dev/vg0/lv0 

... testing 250000 files ...
#1 sequential create     : 189.197 seconds (1321.37 op/s).
#2 random open           : 6.199 seconds (40328.99 op/s).
#3 random stat           : 1.981 seconds (126228.58 op/s).
#4 random read           : 10.851 seconds (23038.37 op/s).
#5 sequential delete     : 50.638 seconds (4937.01 op/s).

# internal log, no barrier
#1 sequential create     : 387.128 seconds (645.78 op/s).
#2 random open           : 12.585 seconds (19864.55 op/s).
#3 random stat           : 1.935 seconds (129192.01 op/s).
#4 random read           : 35.002 seconds (7142.51 op/s).
#5 sequential delete     : 20.691 seconds (12082.71 op/s).

#internal log, with barriers (fs on /dev/sda5)
... testing 250000 files ...
#1 sequential create     : 4728.878 seconds (52.87 op/s). -> OUCH.
#2 random open           : 7.645 seconds (32700.42 op/s).
#3 random stat           : 1.931 seconds (129446.22 op/s).
#4 random read           : 15.157 seconds (6494.04 op/s).
#5 sequential delete     : too long, ^C after a few minutes!

#external log on SSD, with barriers ( fs on /dev/sda5)
... testing 250000 files ...
#1 sequential create     : 193.766 seconds (1290.22 op/s).
#2 random open           : 4.197 seconds (59567.76 op/s).
#3 random stat           : 1.967 seconds (127069.32 op/s).
#4 random read           : 13.847 seconds (18054.43 op/s).
#5 sequential delete     : 53.281 seconds (4692.11 op/s).
"""

BONNIE_FILE_PHASES = ["sequential create", "sequential stat", "sequential delete",
                      "random create", "random stat", "random delete"]


def data(name: str) -> str:
    return (DATA / name).read_text()


def by_name(phases) -> dict:
    return {p.name: p for p in phases}


# Phase

def test_phase_prefers_the_printed_rate_and_derives_one_otherwise():
    derived = Phase("x", 2.0, ops=10, bytes=4 * MIB)
    assert (derived.op_rate, derived.mb_rate) == (5.0, 2.0)
    printed = Phase("x", 2.0, ops=10, bytes=4 * MIB, ops_per_s=7.5, mb_per_s=1.5)
    assert (printed.op_rate, printed.mb_rate) == (7.5, 1.5)
    assert Phase("x", None, ops=10, bytes=MIB).op_rate is None
    assert Phase("x", 0.0, ops=10, bytes=MIB).mb_rate is None
    assert not Phase("x", None).measured and Phase("x", None, ops_per_s=1.0).measured


# pp-smallfiles and seed 003

def test_seed_003_gives_four_runs_of_five_phases():
    phases = parse_smallfiles(SEED_003)
    assert [p.name for p in phases] == list(SMALLFILES_PHASES) * 4
    assert phases[0] == Phase("sequential create", 189.197, ops=250000, ops_per_s=1321.37)
    assert phases[9] == Phase("sequential delete", 20.691, ops=250000, ops_per_s=12082.71)
    assert phases[10].seconds == 4728.878 and phases[10].ops_per_s == 52.87  # "-> OUCH."
    assert phases[19] == Phase("sequential delete", 53.281, ops=250000, ops_per_s=4692.11)


def test_seed_003_interrupted_phase_is_reported_missing():
    interrupted = parse_smallfiles(SEED_003)[14]
    assert interrupted == Phase("sequential delete", None)
    assert not interrupted.measured and interrupted.op_rate is None


def test_seed_003_printed_rate_is_kept_even_when_it_disagrees_with_the_seconds():
    read = parse_smallfiles(SEED_003)[13]
    assert (read.name, read.seconds, read.op_rate) == ("random read", 15.157, 6494.04)
    assert round(read.ops / read.seconds) == 16494


def test_file_count_applies_until_the_next_count_line():
    text = "#1 sequential create : 1.000 seconds (5.00 op/s).\n... testing 7 files ...\n" \
           "#1 sequential create : 1.000 seconds (7.00 op/s).\n"
    assert [p.ops for p in parse_smallfiles(text)] == [None, 7]


def test_smallfiles_guest_capture():
    phases = parse_smallfiles(data("smallfiles-xfs-2000.txt"))
    assert [p.name for p in phases] == list(SMALLFILES_PHASES)
    assert phases[0] == Phase("sequential create", 0.331, ops=2000, ops_per_s=6042.64)
    assert phases[3] == Phase("random read", 0.051, ops=2000, ops_per_s=39416.26)
    for p in phases:  # seconds are printed to 1 ms: the rate agrees within that rounding
        assert (p.seconds - 0.0005) * p.ops_per_s <= p.ops <= (p.seconds + 0.0005) * p.ops_per_s


@pytest.mark.parametrize("text", ["", "hello\n", "#1 sequential frobnicate : 1.0 seconds (1.0 op/s).\n",
                                  "# internal log, no barrier\n"])
def test_smallfiles_rejects_text_without_phase_lines(text):
    with pytest.raises(ValueError, match="pp-smallfiles"):
        parse_smallfiles(text)


def test_smallfiles_rejects_fio_json():
    with pytest.raises(ValueError):
        parse_smallfiles(data("fio-seqwrite.json"))


@pytest.fixture(scope="module")
def smallfiles(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bin") / "pp-smallfiles"
    return compile_static(IMAGES_DIR / "src/pp-smallfiles.c", out)


def test_pp_smallfiles_on_the_host_prints_what_the_parser_reads(smallfiles, tmp_path):
    run = subprocess.run([smallfiles, tmp_path / "sf", "1500", "100", "7"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == "... testing 1500 files ..."
    assert re.fullmatch(r"#1 sequential create     : \d+\.\d{3} seconds \(\d+\.\d{2} op/s\)\.",
                        run.stdout.splitlines()[1])
    phases = parse_smallfiles(run.stdout)
    assert [p.name for p in phases] == list(SMALLFILES_PHASES)
    assert all(p.ops == 1500 and p.seconds is not None for p in phases)
    assert list((tmp_path / "sf").iterdir()) == []


def test_pp_smallfiles_fails_with_a_message(smallfiles, tmp_path):
    (tmp_path / "file").write_text("")
    run = subprocess.run([smallfiles, tmp_path / "file" / "sf", "10"], capture_output=True, text=True)
    assert run.returncode == 1 and "pp-smallfiles: mkdir" in run.stderr
    usage = subprocess.run([smallfiles, tmp_path, "ten"], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: pp-smallfiles DIR COUNT" in usage.stderr


# fio

def test_fio_sequential_write():
    assert parse_fio(data("fio-seqwrite.json")) == [
        Phase("seqwrite", 0.575, ops=64, bytes=64 * MIB, ops_per_s=111.304348, mb_per_s=116711067 / MIB)]


def test_fio_rewrite():
    [rewrite] = parse_fio(data("fio-rewrite.json"))
    assert (rewrite.name, rewrite.seconds, rewrite.ops, rewrite.bytes) == ("rewrite", 0.389, 64, 64 * MIB)
    assert rewrite.mb_rate == 172074010 / MIB


def test_fio_random_write_with_fsync_counts_writes_not_fsyncs():
    [job] = parse_fio(data("fio-randwrite-fsync.json"))
    assert (job.name, job.seconds, job.ops, job.bytes) == ("randwrite-fsync", 5.0, 3677, 15060992)
    assert job.op_rate == 735.252949
    assert job.mb_rate == 3011596 / MIB


def test_fio_numbers_are_the_files_own(tmp_path):
    for name in ("fio-seqwrite.json", "fio-rewrite.json", "fio-randwrite-fsync.json"):
        job = json.loads(data(name))["jobs"][0]
        [phase] = parse_fio(data(name))
        assert phase.ops == job["write"]["total_ios"] + job["read"]["total_ios"]
        assert phase.bytes == job["write"]["io_bytes"] + job["read"]["io_bytes"]
        assert phase.seconds * 1000 == job["job_runtime"]


def test_fio_several_jobs_and_surrounding_warnings():
    doc = json.loads(data("fio-seqwrite.json"))
    second = dict(doc["jobs"][0], jobname="again")
    second["write"] = dict(second["write"], total_ios=32, io_bytes=32 * MIB)
    doc["jobs"].append(second)
    text = "fio: this platform does not support process shared mutexes\n" + json.dumps(doc, indent=1) \
        + "\nfio: file hash not empty on exit\n"
    phases = parse_fio(text)
    assert [(p.name, p.ops, p.bytes) for p in phases] == [("seqwrite", 64, 64 * MIB), ("again", 32, 32 * MIB)]


@pytest.mark.parametrize("text", [
    "", "fio-3.33\n", "{", "[]", "{}", '{"jobs": []}', '{"jobs": [{"jobname": "x"}]}',
    '{"jobs": [{"jobname": "x", "job_runtime": 5, "write": {"total_ios": "many"}}]}',
])
def test_fio_rejects_what_is_not_fio_json(text):
    with pytest.raises(ValueError, match="fio JSON"):
        parse_fio(text)


def test_fio_rejects_bonnie_csv():
    with pytest.raises(ValueError, match="fio JSON"):
        parse_fio(data("bonnie-block.csv"))


# bonnie++

def test_bonnie_block_test_in_mib_per_second():
    phases = parse_bonnie(data("bonnie-block.csv"))
    assert [p.name for p in phases] == ["sequential output block", "rewrite", "sequential input block",
                                        "random seeks"]
    rates = by_name(phases)
    assert rates["sequential output block"].mb_per_s == 101639 / 1024
    assert rates["rewrite"].mb_per_s == 104613 / 1024
    assert rates["sequential input block"].mb_per_s == 218335 / 1024
    assert rates["random seeks"].ops_per_s == 7622.0 and rates["random seeks"].mb_per_s is None
    assert all(p.seconds is None for p in phases)


def test_bonnie_block_rates_agree_with_bonnies_own_table():
    """bonnie++'s text report (tests/data/bonnie-block.txt) prints the same line rounded."""
    row = data("bonnie-block.txt").splitlines()[3].split()
    assert row[:3] == ["(none)", "1G", "99.3m"]
    rates = by_name(parse_bonnie(data("bonnie-block.csv")))
    assert f"{rates['sequential output block'].mb_rate:.1f}m" == row[2]
    assert f"{rates['rewrite'].mb_rate:.0f}m" == row[4]
    assert f"{rates['sequential input block'].mb_rate:.0f}m" == row[6]
    assert f"{rates['random seeks'].op_rate:.0f}" == row[8]


def test_bonnie_file_tests_in_files_per_second_and_too_fast_as_unmeasured():
    phases = parse_bonnie(data("bonnie-files.csv"))
    assert [p.name for p in phases] == BONNIE_FILE_PHASES
    assert [p.ops_per_s for p in phases] == [10310.0, None, 12086.0, 10249.0, None, 9193.0]
    assert [p.measured for p in phases] == [True, False, True, True, False, True]


def test_bonnie_files_all_too_fast():
    phases = parse_bonnie(data("bonnie-files-fast.csv"))
    assert [p.name for p in phases] == BONNIE_FILE_PHASES
    assert not any(p.measured for p in phases)


def test_bonnie_per_char_and_block_with_file_tests():
    phases = by_name(parse_bonnie(data("bonnie-perchr.csv")))
    assert list(phases) == ["sequential output per char", "sequential output block", "rewrite",
                            "sequential input per char", "sequential input block", "random seeks",
                            *BONNIE_FILE_PHASES]
    assert phases["sequential output per char"].mb_per_s == 310 / 1024
    assert phases["sequential input per char"].mb_per_s == 586 / 1024
    assert phases["sequential output block"].mb_per_s == 146212 / 1024
    assert not phases["sequential input block"].measured and not phases["random seeks"].measured


def test_bonnie_header_lines_are_skipped_and_several_lines_are_read_in_turn():
    line = data("bonnie-files.csv")
    header = "name,file_size,putc,putc_cpu\n"
    phases = parse_bonnie(header + line + line)
    assert [p.name for p in phases] == BONNIE_FILE_PHASES * 2


# bonnie++ 1.03's CSV (no format columns), for the results of seed 001's first run.
BONNIE_103 = "kore,4G,,,54162,9,25726,7,,,60158,4,234.2,4,1024,260,11,489116,99,299,1,262,11,92672,56,165,0\n"


@pytest.mark.parametrize("text", [
    "", "\n\n", BONNIE_103, "Version 2.00a       ------Sequential Create------\n",
    "1.98,2.00a,(none),1,1795216657,,,,,,,,,,,,,,,,,1,,,,,+++++,+++\n",
    "1.98,2.00a,(none),1,1,,,,,,,,,,,,,,,,,16,,,,,fast,93,+++++,+++,12086,63,10249,93,+++++,+++,9193,58\n",
])
def test_bonnie_rejects_what_is_not_bonnie_csv(text):
    with pytest.raises(ValueError, match="bonnie\\+\\+ CSV"):
        parse_bonnie(text)


def test_bonnie_rejects_fio_json():
    with pytest.raises(ValueError, match="bonnie\\+\\+ CSV"):
        parse_bonnie(data("fio-seqwrite.json"))
