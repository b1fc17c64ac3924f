"""No command writes over what it reads, or writes two of its outputs into one file: every
path on the command line is checked against the others before any work (exit 2, nothing
changed or created)."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli_run import files_under, refused
from plugpull import cli
from plugpull.files import InputPath, OutputPath, a_path, an_output, atomic_write, refuse_overlaps
from plugpull.errors import UsageError


@pytest.fixture
def case(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "my-case.toml"
    path.write_text("# the user's case\n")
    return path


class Booted(BaseException):
    """Raised where a guest would boot: the refusal came too late."""


@pytest.fixture(autouse=True)
def no_boot(monkeypatch):
    def boot(*args, **kwargs):
        raise Booted("a guest would boot")
    for module in (cli.crash, "plugpull.runs.matrix", "plugpull.runs.caserun", "plugpull.guest.rig"):
        monkeypatch.setattr(module if not isinstance(module, str) else __import__(module, fromlist=["x"]),
                            "prepare_rig", boot)


def test_junit_over_the_case_file_is_refused_and_the_case_kept(case, capsys):
    refused(["reproduce", case, "--junit", case], capsys, f"--junit {case}", f"CASE {case}")
    assert case.read_text() == "# the user's case\n"


def test_junit_over_the_results_is_refused(case, tmp_path, capsys):
    results = tmp_path / "rr.jsonl"
    results.write_text('{"kept": 1}\n')
    (tmp_path / "sub").mkdir()
    refused(["reproduce", case, "--junit", results, "--results", tmp_path / "sub" / ".." / "rr.jsonl"], capsys,
            f"--junit {results}", f"--results {tmp_path}/sub/../rr.jsonl")
    assert results.read_text() == '{"kept": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-case.toml", "rr.jsonl", "sub"]


def test_two_outputs_into_one_file_are_refused_before_any_guest(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    refused(["matrix", "--results", "m.jsonl", "--report", "m.jsonl"], capsys, "--report m.jsonl", "--results m.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_a_link_or_a_second_name_of_an_input_is_the_same_file(case, tmp_path, capsys):
    (tmp_path / "link.toml").symlink_to(case)
    os.link(case, tmp_path / "hard.toml")
    for other in ("link.toml", "hard.toml"):
        refused(["reproduce", case, "--junit", tmp_path / other], capsys, f"--junit {tmp_path / other}")
    assert case.read_text() == "# the user's case\n"


def test_inputs_may_repeat_and_distinct_outputs_pass():
    a, b = tmp = (a_path("x.toml"), a_path("./x.toml"))
    refuse_overlaps([("CASE", a), ("CASE", b), ("--junit", an_output("j.xml")), ("--results", an_output("r.jsonl"))])
    assert isinstance(tmp[0], InputPath) and isinstance(an_output("o"), OutputPath)
    with pytest.raises(UsageError, match="--results r.jsonl: the same file as --junit r.jsonl"):
        refuse_overlaps([("--junit", an_output("r.jsonl")), ("--results", an_output("r.jsonl"))])


def test_minimise_never_replaces_a_directory_that_is_not_a_minimised_state(tmp_path, capsys):
    state = tmp_path / "states" / "s1"
    state.mkdir(parents=True)
    (state / "state.json").write_text(json.dumps({"verdict": "data-loss"}))
    other = tmp_path / "states" / "s2"
    other.mkdir()
    (other / "state.json").write_text(json.dumps({"verdict": "clean"}))
    refused(["minimise", state, "--out", other], capsys, f"--out {other}", "not a minimised state")
    refused(["minimise", state, "--out", state], capsys, f"--out {state}", f"DIR {state}")
    assert json.loads((other / "state.json").read_text()) == {"verdict": "clean"}


def a_state(tmp_path) -> Path:
    state = tmp_path / "s"
    state.mkdir()
    (state / "state.json").write_text(json.dumps({"fs": "btrfs", "workload": "gen:seq2-080435", "acks_required": 2}))
    return state


@pytest.mark.parametrize("style", ["sh", "fstests"])
def test_a_reproducer_never_writes_over_its_state(tmp_path, capsys, style):
    state = a_state(tmp_path)
    kept = (state / "state.json").read_text()
    refused(["reproducer", state, "--style", style, "--out", state / "state.json"], capsys,
            f"--out {state}/state.json", "an input of this command")
    assert (state / "state.json").read_text() == kept and sorted(os.listdir(state)) == ["state.json"]


def test_fstests_golden_output_is_checked_as_an_output(tmp_path, capsys):
    (tmp_path / "kept").write_text("kept\n")
    (tmp_path / "900.out").symlink_to(tmp_path / "kept")
    refused(["reproducer", "gen:seq1-000253", "--fs", "xfs", "--style", "fstests", "--out", tmp_path / "900"], capsys,
            f"--out {tmp_path}/900.out", "symbolic link")
    assert (tmp_path / "kept").read_text() == "kept\n" and not (tmp_path / "900").exists()


LINKED = [["reproducer", "gen:seq1-000253", "--fs", "xfs", "--out"], ["crash", "--json"],
          ["matrix", "--results"], ["faults", "--fault", "error-writes", "--json"],
          ["report", "{tmp}/r.jsonl", "--log-file"]]


@pytest.mark.parametrize("argv", LINKED, ids=lambda argv: argv[0])
@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_a_link_at_an_output_is_refused_never_replaced(tmp_path, capsys, monkeypatch, argv, dangling):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "target"
    if not dangling:
        target.write_text("kept\n")
    (tmp_path / "link").symlink_to(target)
    refused([a.format(tmp=tmp_path) for a in argv] + [tmp_path / "link"], capsys, f"{tmp_path}/link", "link")
    assert os.readlink(tmp_path / "link") == str(target)
    assert sorted(os.listdir(tmp_path)) == ["link"] + ["target"] * (not dangling)
    assert dangling or target.read_text() == "kept\n"


def test_an_atomic_write_refuses_a_link(tmp_path):
    (tmp_path / "kept").write_text("kept\n")
    (tmp_path / "link").symlink_to("kept")
    with pytest.raises(UsageError, match="symbolic link"):
        atomic_write(tmp_path / "link", "x")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "kept").read_text() == "kept\n"


def test_a_kernel_file_is_an_input(tmp_path, capsys):
    (tmp_path / "bz").write_bytes(b"\0" * 4096)
    (tmp_path / "m").mkdir()
    refused(["reproducer", "gen:seq1-000253", "--fs", "xfs", "--run", "--kernel", tmp_path / "bz", "--modules",
             tmp_path / "m", "--out", tmp_path / "bz"], capsys, f"--kernel {tmp_path}/bz", "an output")
    assert (tmp_path / "bz").read_bytes() == b"\0" * 4096


def test_a_report_is_never_written_inside_a_hunt_s_directory(tmp_path, capsys):
    """Not inside the hunts it reads, nor inside any other hunt's (which only its hunt
    writes), for a hunts' report and a matrix report alike; a dangling link at --out is
    said in words."""
    from tests.unit.report.test_hunts import make_hunt
    from tests.unit.hunt.test_findings import SETTINGS as BTRFS
    read, other = make_hunt(tmp_path / "a", BTRFS, []), make_hunt(tmp_path / "b", BTRFS, [])
    results = tmp_path / "r.jsonl"
    results.write_text("{}\n")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    for source in (read, results):
        refused(["report", source, "--out", other / "sub" / "rep"], capsys, f"--out {other}/sub/rep",
                f"inside the hunt directory {other}")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    refused(["report", read, "--out", tmp_path / "link"], capsys, f"--out {tmp_path}/link: a dangling symbolic link")
    assert sorted(str(p) for p in tmp_path.rglob("*")) == sorted(before + [str(tmp_path / "link")])


def test_a_reproducer_never_writes_over_the_record_of_its_case(tmp_path, capsys):
    root = Path(__file__).resolve().parents[3]
    shutil.copytree(root / "suites" / "records", tmp_path / "records")
    (tmp_path / "cases").mkdir()
    case = tmp_path / "cases" / "hole.toml"
    case.write_text((root / "suites" / "cases" / "finding-xfs-log-hole.toml").read_text())
    record = tmp_path / "records" / "xfs-log-hole" / "record.json"
    kept = record.read_bytes()
    refused(["reproducer", case, "--out", record], capsys, f"--out {record}", "an input of this command")
    assert record.read_bytes() == kept


def test_a_report_never_replaces_the_saved_states_it_shows(tmp_path, capsys):
    """`report RESULTS --out` a cell's artifacts directory: the report's states/ would take the
    place of the saved states it reads; a hunt's directory as the report's workloads/ likewise."""
    from tests.unit.report.test_states import KEY, run
    results = run.__wrapped__(tmp_path)
    cell = results.parent / "m-artifacts" / KEY.replace("/", "-")
    before = files_under(tmp_path)
    refused(["report", results, "--out", cell], capsys, f"--out {cell}", "an input of this command")
    assert files_under(tmp_path) == before
    directory = results.parent  # a results directory's report goes inside it, again and again
    assert cli.main(["report", str(directory)]) == 0 and cli.main(["report", str(directory)]) == 0
    assert (directory / "report" / "report.html").is_file() and (cell / "states").is_dir()
    from plugpull.generate.space import workload_of
    from tests.unit.report.test_hunts import RENAMES, make_hunt
    from tests.unit.hunt.test_findings import SETTINGS as BTRFS, both_names
    hunt = make_hunt(tmp_path / "top" / "workloads", BTRFS, [both_names(workload_of(RENAMES[0]))])
    before = files_under(tmp_path)
    refused(["report", hunt, "--out", tmp_path / "top"], capsys, f"--out {tmp_path / 'top'}: its workloads would be "
            f"written over {hunt}")
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("argv, over", [
    (["crash", "--workload", "script:{tmp}/a.sh", "--check-script", "{tmp}/c.sh", "--json"], "a.sh"),
    (["crash", "--workload", "script:{tmp}/a.sh", "--check-script", "{tmp}/c.sh", "--json"], "c.sh"),
    (["matrix", "--workload", "script:{tmp}/a.sh,fsync-files", "--check-script", "{tmp}/c.sh", "--results"], "a.sh"),
    (["matrix", "--workload", "script:{tmp}/a.sh", "--check-script", "{tmp}/c.sh", "--report"], "c.sh")])
def test_an_output_over_the_users_script_is_refused_before_any_guest(argv, over, tmp_path, capsys):
    for name in ("a.sh", "c.sh"):
        (tmp_path / name).write_text(f"#!/bin/sh\n# {name}\n")
    refused([a.format(tmp=tmp_path) for a in argv] + [tmp_path / over], capsys, f"{tmp_path / over}",
            "an input of this command")
    assert all((tmp_path / name).read_text() == f"#!/bin/sh\n# {name}\n" for name in ("a.sh", "c.sh"))
