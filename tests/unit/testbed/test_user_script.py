"""The user's own workload (`script:PATH`) and check script: the output parser, the oracle
built on it, the settings and case-file vocabulary, and bad scripts refused before any boot."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.fake_backend import FakeBackend, Outcome, Plan
from tests.case_files import write_case
from plugpull.check.checker import Checker, ScriptCollect
from plugpull.check.verdict import Ack
from plugpull.cli import main
from plugpull.crash.judge import StateJob, collect_for, judge
from plugpull.crash.record import Record, Trigger, record
from plugpull.crash.spec import CrashSpec, load_user_scripts
from plugpull.errors import UsageError
from plugpull.guest.contract.config import Accel
from plugpull.guest.image.build import GuestImage
from plugpull.guest.rig import Rig
from plugpull.paths import ROOT
from plugpull.powerloss.writelog import LogWriter
from plugpull.runs.cases import CaseError, load_case
from plugpull.runs.matrix import Cell, with_user_scripts
from plugpull.runs.settings import option_type
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.workloads import CheckScriptError, FsyncFiles, Lost, Script, SmallFiles, workload
from plugpull.testbed.workloads.script import broken_invariants, parse_check_output

EXAMPLE = ROOT / "suites" / "cases" / "own-script"
BUSYBOX = shutil.which("busybox")
needs_busybox = pytest.mark.skipif(BUSYBOX is None, reason="busybox-static is not installed (make deps)")


def files(out: str, rc: str = "0", err: str = "") -> dict:
    return {"check-script.out": out.encode(), "check-script.rc": rc.encode(), "check-script.err": err.encode()}


def scripts(tmp_path, text="echo 'ack 1' >&4\n", check="exit 0\n") -> tuple[Path, Path]:
    (tmp_path / "app.sh").write_text(text)
    (tmp_path / "check.sh").write_text(check)
    return tmp_path / "app.sh", tmp_path / "check.sh"


# --- the check script's output ---------------------------------------------------------------

def test_parser_reads_lost_and_inconsistent_lines_and_ignores_commentary():
    found = parse_check_output("checking 3 ids\nlost 2 rec-2 is missing\n  lost 7   torn  \n"
                               "inconsistent rec-5 exists without rec-4\nall done\nlosted 9\n")
    assert found.lost == [Lost(2, "rec-2 is missing"), Lost(7, "torn")]
    assert found.broken == ["rec-5 exists without rec-4"]
    assert found.malformed == []


@pytest.mark.parametrize("line", ["lost", "lost x gone", "lost 1.5 half", "inconsistent", "inconsistent   "])
def test_parser_reports_a_malformed_finding_instead_of_dropping_it(line):
    found = parse_check_output(f"lost 1 fine\n{line}\n")
    assert found.malformed == [line.strip()]
    assert found.lost == [Lost(1, "fine")]


def test_a_lost_line_without_a_reason_gets_one():
    assert parse_check_output("lost 4").lost == [Lost(4, "reported lost by the check script")]


def test_broken_invariants_are_the_inconsistent_lines():
    assert broken_invariants(files("inconsistent a hole at 6\nlost 1 x\n")) == ["a hole at 6"]
    assert broken_invariants(files("lost 1 x\n")) == []


# --- the oracle ------------------------------------------------------------------------------

WL = Script(text="echo 'ack 1' >&4\n", check="exit 0\n")


def test_lost_keeps_the_owed_acks_the_script_reported():
    out = files("lost 1 gone\nlost 3 torn\nlost 9 never promised\n")
    assert WL.lost([1, 2, 3], out) == [Lost(1, "gone"), Lost(3, "torn")]
    assert WL.lost([1, 2, 3], files("")) == []


def test_a_missing_work_directory_loses_every_owed_ack():
    assert WL.lost([1, 2], {"check-script.rc": b"absent"}) == [Lost(1, "the work directory is missing"),
                                                               Lost(2, "the work directory is missing")]


def test_a_failing_check_script_without_findings_is_an_error_not_a_verdict():
    with pytest.raises(CheckScriptError, match="exited 2 without a lost or inconsistent line: boom"):
        WL.lost([1], files("just chatter\n", rc="2", err="sh: x: not found\nboom\n"))
    with pytest.raises(CheckScriptError, match="exited 137 .*: killed after 120 s"):
        WL.lost([], files("", rc="137"))


def test_a_failing_check_script_with_findings_counts_them():
    assert WL.lost([1], files("lost 1 gone\n", rc="1")) == [Lost(1, "gone")]
    assert WL.lost([1], files("inconsistent a hole\n", rc="1")) == []


def test_a_malformed_line_is_an_error():
    with pytest.raises(CheckScriptError, match="malformed line: 'lost one'"):
        WL.lost([1], files("lost one\n"))


@needs_busybox
def test_the_workload_script_runs_in_the_work_directory_with_fd_4_and_its_path(tmp_path):
    wl = Script(text='echo data > f && sync f . && echo "ack 5" >&4 && echo "$PP_ACK $PP_ACK_FD" > env\n',
                check="exit 0\n")
    (tmp_path / "pp").mkdir()
    (tmp_path / "wl.sh").write_text(wl.script(str(tmp_path), ack=str(tmp_path / "acks"), relay=str(tmp_path / "relay")))
    subprocess.run([BUSYBOX, "sh", str(tmp_path / "wl.sh")], check=True, timeout=60,
                   env={"PATH": os.path.dirname(BUSYBOX)})
    assert (tmp_path / "acks").read_text() == "ack 5\n"
    assert (tmp_path / "pp" / "env").read_text() == f"{tmp_path / 'relay'} 4\n"



@needs_busybox
def test_acks_written_by_opening_fd_4_again_arrive_through_the_relay_and_the_status_stays(tmp_path):
    """`>> /dev/fd/4` and `>> $PP_ACK` open the acks again: the port takes one opener, so they
    go through a FIFO that a cat relays; every ack arrives, in order, and `exit 3` stays 3."""
    wl = Script(text='echo "ack 1" >&4\necho "ack 2" >> /dev/fd/4\necho "ack 3" >> "$PP_ACK"\n'
                     'sh -c \'echo "ack 4" >&4\'\nexit 3\n', check="exit 0\n")
    (tmp_path / "pp").mkdir()
    (tmp_path / "wl.sh").write_text(wl.script(str(tmp_path), ack=str(tmp_path / "acks"), relay=str(tmp_path / "relay")))
    done = subprocess.run([BUSYBOX, "sh", str(tmp_path / "wl.sh")], timeout=60, env={"PATH": os.path.dirname(BUSYBOX)})
    assert done.returncode == 3
    assert (tmp_path / "acks").read_text() == "ack 1\nack 2\nack 3\nack 4\n"
    assert stat.S_ISFIFO(os.stat(tmp_path / "relay").st_mode)

@needs_busybox
def test_the_example_check_script_reports_the_missing_and_the_impossible(tmp_path):
    for n in (1, 2, 4):
        (tmp_path / f"rec-{n}").write_text(f"record {n}\n")
    (tmp_path / "rec-2").write_text("")
    env = {"PATH": os.path.dirname(BUSYBOX), "PP_REQUIRED_IDS": "1 2 3"}
    out = subprocess.run([BUSYBOX, "sh", str(EXAMPLE / "records-check.sh")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60).stdout
    found = parse_check_output(out)
    assert [lost.ack for lost in found.lost] == [2, 3]
    assert found.broken == ["rec-4 exists without rec-3"]


# --- the checker and the judge ---------------------------------------------------------------

def test_a_script_workload_runs_its_check_on_every_state_with_the_owed_ids():
    assert collect_for(WL, [1, 4]) == ScriptCollect("exit 0\n", (1, 4))
    assert collect_for(WL, []) == ScriptCollect("exit 0\n", ())
    assert collect_for(SmallFiles(), []) == "none"  # no invariants, nothing owed: nothing to read
    assert collect_for(FsyncFiles(), []) == "tar"  # its invariants hold of every state


def record_of(tmp_path, rounds: int) -> Record:
    """A write and a flush per round, ack i after round i (as tests/unit/guest/test_backend.py's)."""
    d = tmp_path / "record"
    d.mkdir()
    (d / "base.img").write_bytes(bytes(64 << 10))
    with LogWriter(d / "write.log") as log:
        for i in range(1, rounds + 1):
            log.write(0, f"round {i}".encode().ljust(512, b"\0"))
            log.flush()
    return Record(d, {"workload": WL.name, "params": WL.params()}, [Ack(i, 0, 2 * i) for i in range(1, rounds + 1)])


def round_of(image) -> int:
    with open(image, "rb") as f:
        return int(f.read(512).rstrip(b"\0").split()[1])


IMAGE = GuestImage("fake", Path("/nonexistent/kernel"), Path("/nonexistent/initramfs"), "6.1.0-fake")


def judged_by(tmp_path, outcome_of, rounds=3):
    backend = FakeBackend([], outcome_of)
    checker = Checker(Rig(IMAGE, Accel.TCG, backend), filesystem("ext4"), batch=8)
    jobs = [StateJob("prefix", 2 * i) for i in range(1, rounds + 1)]
    return backend, judge(record_of(tmp_path, rounds), jobs, checker, WL, seed=1, state_dir=tmp_path / "states")


def test_the_checker_uploads_the_check_and_the_owed_ids_and_judges_by_its_output(tmp_path):
    def outcome_of(image):
        return Outcome(files=files("lost 2 rec-2 is gone\n" if round_of(image) == 3 else ""))

    backend, results = judged_by(tmp_path, outcome_of)
    assert [str(r.verdict.verdict) for r in results] == ["clean", "clean", "data-loss"]
    assert results[2].verdict.lost == [Lost(2, "rec-2 is gone")]
    [guest] = backend.guests
    assert guest.files["/tmp/user-check.sh"] == b"exit 0\n"
    assert guest.files["/tmp/user-check.ids"] == b"1\n2\n3\n"
    assert sum("pp-check ext4" in c and " script " in c for c in guest.commands) == 3
    for r in results:
        r.state.remove()


def test_a_check_that_fails_without_findings_names_the_state(tmp_path):
    def outcome_of(image):
        return Outcome(files=files("", rc="1" if round_of(image) == 2 else "0"))

    with pytest.raises(CheckScriptError, match=r"exited 1 .*\(crash state prefix cut 4\)"):
        judged_by(tmp_path, outcome_of)


@pytest.mark.parametrize("lines, message", [
    (("ack 1", "ack one"), "malformed ack line 'ack one'"),
    (("ack 1", "ack 2 3"), "malformed ack line 'ack 2 3'"),
    (("ack 1", "done 1"), "the workload script exited 1 in the guest"),
])
def test_a_user_workload_that_misbehaves_is_bad_input_not_a_harness_failure(tmp_path, lines, message):
    backend = FakeBackend([Plan(ack_lines=lines)])
    bed = BedSpec(filesystem("ext4"), mode("barrier"), WL, disk_mib=64)
    with pytest.raises(UsageError, match=message) as e:
        record(tmp_path / "rec", bed, Trigger.parse("end"), Rig(IMAGE, Accel.TCG, backend), timeout=20)
    assert "\n" not in str(e.value)
    [guest] = backend.guests
    assert not guest.alive()


# --- settings, specs, case files -------------------------------------------------------------

def test_the_workload_setting_takes_script_path_and_refuses_an_empty_one():
    assert option_type("workload", "crash")("script:app.sh") == "script:app.sh"
    assert option_type("workload", "matrix")("fsync-files,script:a.sh") == ("fsync-files", "script:a.sh")
    with pytest.raises(Exception, match="needs the script's path"):
        option_type("workload", "crash")("script:")
    with pytest.raises(Exception, match="or script:PATH"):
        option_type("workload", "crash")("scrip:app.sh")


def test_the_scripts_contents_not_their_paths_are_the_runs_identity(tmp_path):
    app, check = scripts(tmp_path)
    spec = load_user_scripts(CrashSpec(workload=f"script:{app}", check_script=str(check)), Path("."))
    assert spec.workload == "script" and spec.check_script == ""
    assert dict(spec.params) == {"text": app.read_text(), "check": check.read_text()}
    assert str(tmp_path) not in str(spec.to_json())
    assert isinstance(spec.resolve().workload, Script)

    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.copy(app, moved / "renamed.sh")
    same = load_user_scripts(CrashSpec(workload="script:renamed.sh", check_script=str(check)), moved)
    assert Cell(same).key() == Cell(spec).key()
    app.write_text("echo 'ack 2' >&4\n")
    changed = load_user_scripts(CrashSpec(workload=f"script:{app}", check_script=str(check)), Path("."))
    assert Cell(changed).key() != Cell(spec).key()


def test_a_saved_recordings_params_rebuild_the_workload():
    again = workload(WL.name, **WL.params())
    assert again == WL


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "nope.sh", "no such file"),
    (lambda d: d, "not a regular file"),
    (lambda d: (d / "bin.sh").write_bytes(b"\xff\xfe\x00") and d / "bin.sh", "not a text file"),
    (lambda d: (d / "blank.sh").write_text("\n  \n") and d / "blank.sh", "empty"),
])
def test_bad_scripts_are_refused_with_one_line(tmp_path, make, message):
    app, check = scripts(tmp_path)
    bad = make(tmp_path)
    for spec in (CrashSpec(workload=f"script:{bad}", check_script=str(check)),
                 CrashSpec(workload=f"script:{app}", check_script=str(bad))):
        with pytest.raises(UsageError, match=message) as e:
            load_user_scripts(spec, Path("."))
        assert "\n" not in str(e.value) and str(bad) in str(e.value)


def test_an_unreadable_script_is_refused(tmp_path, monkeypatch):
    app, check = scripts(tmp_path)
    real_open = os.open

    def refusing_open(path, *args, **kwargs):  # what a file without read permission says (root reads any)
        if str(path) == str(app):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(os, "open", refusing_open)
    with pytest.raises(UsageError, match=f"{app}: Permission denied"):
        load_user_scripts(CrashSpec(workload=f"script:{app}", check_script=str(check)), Path("."))


def test_a_script_workload_needs_a_check_script_and_only_it_takes_one(tmp_path):
    app, check = scripts(tmp_path)
    with pytest.raises(UsageError, match="needs a check script"):
        load_user_scripts(CrashSpec(workload=f"script:{app}"), Path("."))
    with pytest.raises(UsageError, match="is for a script:PATH workload"):
        load_user_scripts(CrashSpec(workload="fsync-files", check_script=str(check)), Path("."))
    with pytest.raises(UsageError, match="not read yet"):
        CrashSpec(workload=f"script:{app}", check_script=str(check)).resolve()


def test_matrix_cells_give_the_check_script_to_the_script_workloads_alone(tmp_path):
    app, check = scripts(tmp_path)
    base = CrashSpec(check_script="check.sh")
    todo = with_user_scripts([Cell(CrashSpec(workload="fsync-files", check_script="check.sh")),
                              Cell(CrashSpec(workload="script:app.sh", check_script="check.sh"))], tmp_path)
    assert [c.workload for c in todo] == ["fsync-files", "script"]
    assert todo[0].spec.check_script == "" and dict(todo[1].params)["check"] == "exit 0\n"
    with pytest.raises(UsageError, match="none is given"):
        with_user_scripts([Cell(base)], tmp_path)


CASE = """
title = "t"
[matrix]
fs = ["ext4"]
modes = ["barrier"]
workloads = ["script:scripts/app.sh"]
[crash]
check_script = "scripts/check.sh"
"""


def test_a_case_file_reads_its_scripts_relative_to_itself(tmp_path):
    (tmp_path / "scripts").mkdir()
    scripts(tmp_path / "scripts")
    [cell] = load_case(write_case(tmp_path, CASE)).cells
    assert cell.workload == "script" and dict(cell.params)["text"] == "echo 'ack 1' >&4\n"
    cell.validate()


@pytest.mark.parametrize("change, message", [
    (("scripts/check.sh", "scripts/gone.sh"), "check script .*gone.sh: no such file"),
    (("script:scripts/app.sh", "script:scripts"), "workload script .*scripts: a directory, not a regular file"),
    (('check_script = "scripts/check.sh"', ""), "needs a check script"),
    (('check_script = "scripts/check.sh"', "check_script = 3"), r"\[crash\] check_script"),
])
def test_a_case_file_with_a_bad_script_names_it(tmp_path, change, message):
    (tmp_path / "scripts").mkdir()
    scripts(tmp_path / "scripts")
    path = write_case(tmp_path, CASE.replace(*change))
    with pytest.raises(CaseError, match=message):
        load_case(path)


def test_the_shipped_example_case_reads_its_scripts():
    cells = load_case(ROOT / "suites" / "cases" / "example-own-script.toml").cells
    assert {dict(c.params)["text"] for c in cells} == {(EXAMPLE / "records.sh").read_text()}


# --- the CLI ---------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["--workload", "script:{d}/nope.sh", "--check-script", "{d}/check.sh"], "workload script .*nope.sh: no such file"),
    (["--workload", "script:{d}/app.sh", "--check-script", "{d}"], "check script .*: a directory, not a regular file"),
    (["--workload", "script:{d}/app.sh"], "needs a check script"),
    (["--workload", "fsync-files", "--check-script", "{d}/check.sh"], "is for a script:PATH workload"),
])
def test_the_cli_refuses_bad_scripts_before_any_guest_boots(tmp_path, capsys, monkeypatch, argv, message):
    import plugpull.cli.crash as crash_cli

    scripts(tmp_path)
    monkeypatch.setattr(crash_cli, "prepare_rig", lambda *a: pytest.fail("a guest was about to boot"))
    out = tmp_path / "out"
    rc = main(["crash", *(a.format(d=tmp_path) for a in argv), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert __import__("re").search(message, err), err
    assert not out.exists()


def test_a_script_shows_in_titles_by_its_digest_not_its_text():
    from plugpull.results.schema import param_text

    shown = param_text("i=1\necho \"ack $i\" >&4\n")
    assert shown.startswith("sha256:") and "\n" not in shown and len(shown) == 19
    assert param_text("wal") == "wal" and param_text(40) == "40"
