"""`plugpull hunt` in guests: a sampled hunt with barriers is clean; without them the oracle
names the rule each loss broke and the failing workload replays; a hunt stopped with Ctrl-C
goes on where it stopped, judging no workload twice and leaving no guest behind."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plugpull import cli
from plugpull.hunt.journal import JOURNAL
from plugpull.paths import ROOT
from tests.vm.test_cleanup import children_qemu

pytestmark = pytest.mark.vm


def journal(out: Path) -> list[dict]:
    path = out / JOURNAL
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def test_a_sampled_hunt_with_barriers_is_clean(tmp_path, capsys):
    out = tmp_path / "h"
    assert cli.main(["hunt", "--seq", "1", "--sample", "6", "--seed", "5", "--chunk", "3", "--out", str(out),
                     "--fail-on-unsafe"]) == 0
    lines = journal(out)
    assert len(lines) == 6 and not any(line["failing"] for line in lines)
    assert all(line["states"] >= 3 and set(line["verdicts"]) == {"clean"} for line in lines)
    assert "6 of 6 workloads" in capsys.readouterr().out and (out / "summary.txt").is_file()
    assert not any(out.glob(".work-*")) and not (out / "failing").exists()
    started = [line for line in (out / "hunt.log").read_text().splitlines()
               if "plugpull-checker" in line and (" restored in " in line or " booted in " in line)]
    assert len(started) <= 2, "the checker guests are kept from one chunk to the next"


def test_without_barriers_the_oracle_names_the_broken_rule_and_the_failure_replays(tmp_path, capsys):
    out = tmp_path / "h"
    code = cli.main(["hunt", "--seq", "1", "--ops", "creat,fsync", "--mode", "nobarrier", "--out", str(out),
                     "--fail-on-unsafe"])
    text = capsys.readouterr().out
    assert code == 1, text
    failing = [line for line in journal(out) if line["failing"]]
    assert failing and all(line["rules"] for line in failing)
    assert "fsync-names" in {rule for line in failing for rule in line["rules"]} or \
        "sync-all" in {rule for line in failing for rule in line["rules"]}
    assert re.search(r"^findings: \d+ from \d+ failing workloads \(by rule: .*(fsync-names|sync-all)", text, re.M), text
    assert (out / failing[0]["artifact"] / "program.sh").is_file()
    state, refused = state_to_minimise(out, failing[0])
    assert cli.main(["replay", str(state)]) == 0  # the same digest and the same verdict
    capsys.readouterr()
    code, said = cli.main(["minimise", str(state)]), capsys.readouterr()
    if refused is None:
        assert code == 0 and (state / "minimised" / "summary.txt").read_text() in said.out, said
    else:
        assert code == 1 and said.out == f"not minimised: {refused}: the volatile writes do not explain it\n", said
        assert not (state / "minimised").exists()


def state_to_minimise(out: Path, line: dict) -> tuple[Path, str | None]:
    """A saved state of the failing workload, and what minimise must say of it: None if a state
    of a reference plan at its cut (every write whole: `prefix`; none unflushed: `drop-unflushed`,
    both models of the hunt's own) was clean, that is, not saved; else the refusal naming both.
    A state with a clean reference is taken where there is one."""
    states = sorted((out / line["artifact"] / "states").iterdir())
    saved = [(d, json.loads((d / "state.json").read_text())) for d in states]
    outcomes = []
    for path, doc in saved:
        at_cut = {other["model"]: other["verdict"] for _, other in saved if other["cut"] == doc["cut"]}
        both = "drop-unflushed" in at_cut and "prefix" in at_cut
        outcomes.append((path, "neither reference state is clean (drop-unflushed: "
                                f"{at_cut['drop-unflushed']}, prefix: {at_cut['prefix']})" if both else None))
    return next((o for o in outcomes if o[1] is None), outcomes[0])


def test_a_hunt_stopped_with_ctrl_c_goes_on_where_it_stopped(tmp_path):
    out = tmp_path / "h"
    argv = [sys.executable, "-m", "plugpull", "hunt", "--seq", "1", "--sample", "6", "--seed", "9", "--chunk", "2",
            "--out", str(out)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while len(journal(out)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the hunt ended before it could be stopped"
    qemus = children_qemu(proc.pid)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 130
    assert not any(Path(f"/proc/{q}").exists() for q in qemus), "a guest outlived the stopped hunt"
    before = {line["id"] for line in journal(out)}
    assert 2 <= len(before) < 6 and not any(out.glob(".work-*"))
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{6 - len(before)} of 6 workloads to go ({len(before)} done before)" in done.stderr
    ids = [line["id"] for line in journal(out)]
    assert len(ids) == len(set(ids)) == 6 and before <= set(ids)


def test_a_hunt_over_two_kernels_judges_each_workload_on_each(tmp_path, capsys):
    out = tmp_path / "h"
    assert cli.main(["hunt", "--seq", "1", "--sample", "2", "--kernel", "host,debian:5.10", "--fs", "ext4",
                     "--out", str(out)]) == 0
    kernels = json.loads((out / "hunt.json").read_text())["kernels"]
    assert len(kernels) == 2 and kernels[1].startswith("5.10.") and kernels[0] != kernels[1]
    lines = journal(out)
    ids = sorted({line["id"] for line in lines})
    assert len(ids) == 2 and [(line["id"], line["kernel"]) for line in lines] == [(i, k) for k in kernels for i in
                                                                                   [line["id"] for line in lines[:2]]]
    assert all(line["states"] >= 3 and "infra" not in line for line in lines)
    text = capsys.readouterr().out
    assert f"kernels {kernels[0]}, {kernels[1]}: 4 of 4 workload runs" in text
    assert all(f"  on {k}: 2 of 2 workloads" in text for k in kernels)
    assert not any(out.glob(".work-*"))
