"""bench/scsi_crossings.py: bad input is refused before any guest boots; a journal and a trace
are joined disk by disk, and a trace that does not match its journal is refused."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.bench_module import load_bench

BENCH = Path(__file__).resolve().parents[3] / "bench" / "scsi_crossings.py"


def run_bench(*args, timeout=60):
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout)


def test_a_hunt_without_a_new_out_directory_exits_2(tmp_path):
    for args in (["--seq", "1", "--fs", "f2fs"], ["--seq", "1", "--fs", "f2fs", "--out", str(tmp_path)]):
        out = run_bench(*args)
        assert out.returncode == 2
        assert "--out" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def disk(lun, crossing):
    """A plugged-in disk's trace: a write, then a flush issued before (crossing) or after it completed."""
    req = f"virtio_scsi_cmd_req virtio_scsi_cmd_req lun={lun} tag=0x{{}} cmd={{}}"
    resp = f"virtio_scsi_cmd_resp virtio_scsi_cmd_resp lun={lun} tag=0x{{}} response=0 status=0x0"
    lines = [req.format(1, "0x12"), req.format(2, "0x2a")]
    flush = [req.format(3, "0x35"), resp.format(3)]
    return lines + (flush + [resp.format(2)] if crossing else [resp.format(2)] + flush)


def hunt_dir(tmp_path, failing):
    out = tmp_path / "hunt"
    out.mkdir()
    with open(out / "hunt.jsonl", "w") as journal:
        for n, fails in enumerate(failing):
            journal.write(json.dumps({"id": f"seq1-{n:06d}", "ops": f"op {n}", "failing": fails}) + "\n")
    trace = tmp_path / "hunt.trace"
    trace.mkdir()
    return out, trace


def test_the_trace_is_joined_to_the_journal_disk_by_disk(tmp_path, capsys):
    out, trace = hunt_dir(tmp_path, [True, False, False])
    (trace / "recorder-0.log").write_text("\n".join(disk(0, True) + disk(1, True) + disk(2, False)))
    assert load_bench("scsi_crossings").report(out, trace) == 0
    printed = capsys.readouterr().out
    rows = [line.split() for line in printed.splitlines()]
    assert ["seq1-000000", "op", "0", "failing", "1", "1"] in rows
    assert ["seq1-000001", "op", "1", "clean", "1", "1"] in rows
    assert "seq1-000002" not in printed
    assert together(printed) == {("crossed", "failing"): 1, ("crossed", "clean"): 1, ("no crossing", "clean"): 1}


def together(printed):
    found = (re.match(r"^(crossed|no crossing)\s+(clean|failing)\s+(\d+)$", line) for line in printed.splitlines())
    return {(m.group(1), m.group(2)): int(m.group(3)) for m in found if m}


def test_a_trace_that_does_not_match_the_journal_exits_3(tmp_path, capsys):
    out, trace = hunt_dir(tmp_path, [True, False])
    (trace / "recorder-0.log").write_text("\n".join(disk(0, True)))
    assert load_bench("scsi_crossings").report(out, trace) == 3
    assert "1 disks, the journal 2" in capsys.readouterr().err


def test_the_traced_recorder_plugs_a_disk_for_each_workload(tmp_path):
    """A hunt keeps one recording disk for many workloads; the trace is read disk by disk, one
    a workload, so inside the bench the recorder keeps none, and outside it keeps its own."""
    from plugpull.hunt.record import Recorder
    bench = load_bench("scsi_crossings")
    with bench.traced_recorder(tmp_path):
        assert Recorder(None, None, None, None, 64, keep_disk=True).keep_disk is False
    assert Recorder(None, None, None, None, 64, keep_disk=True).keep_disk is True


@pytest.mark.vm
def test_a_small_hunt_is_traced(tmp_path):
    out = run_bench("--seq", "1", "--ops", "dwrite,fsync", "--fs", "f2fs", "--out", str(tmp_path / "h"), timeout=900)
    assert out.returncode == 0, out.stderr
    assert sum(together(out.stdout).values()) == 8
