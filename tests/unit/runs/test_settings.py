"""Settings are declared once: the CLI options, the case file's fields and the JSON keys all
come from `SETTINGS`, and a bad value is refused where it enters, with its name."""

import dataclasses

import pytest

from plugpull.cli import main, parser
from plugpull.crash.spec import CrashSpec
from plugpull.errors import UsageError
from plugpull.runs.cases import CaseError, load_case
from plugpull.runs.matrix import Cell, cells
from plugpull.runs.settings import DEFAULT_MODEL, SETTINGS, settings_of
from plugpull.testbed.profiles import load_profiles

CASE = """
title = "t"
[matrix]
fs = ["xfs"]
modes = ["barrier"]
workloads = ["fsync-files"]
"""


def parsed(*argv):
    return parser().parse_args(list(argv))


@pytest.mark.parametrize("command", ["crash", "matrix"])
def test_every_setting_of_a_command_is_an_option_with_its_declared_default(command):
    args = parsed(command)
    for s in settings_of(command):
        default = s.defaults[command]
        assert getattr(args, s.key) == (s.parse(default, command) if default else ""), s.key


def test_every_setting_is_a_field_of_the_spec_or_the_cell_and_a_json_key():
    spec_fields = {f.name for f in dataclasses.fields(CrashSpec)}
    cell_json = Cell(CrashSpec()).to_json()
    for s in SETTINGS:
        assert s.key in spec_fields or s.key in cell_json, s.key
        assert s.key in CrashSpec().to_json() or s.key in cell_json, s.key


def test_matrix_defaults_give_the_cells_a_case_file_gives(tmp_path):
    args = parsed("matrix", "--fs", "xfs", "--mode", "barrier", "--workload", "fsync-files")
    base = CrashSpec(**{s.key: getattr(args, s.key) for s in settings_of("matrix")
                        if s.key not in ("fs", "mode", "workload", "profile")})
    from_cli = cells(base, args.fs, args.mode, args.workload, profile=args.profile)
    case = tmp_path / "c.toml"
    case.write_text(CASE)
    assert [c.key() for c in from_cli] == [c.key() for c in load_case(case).cells]
    assert from_cli[0].spec.models == (DEFAULT_MODEL,) and from_cli[0].spec.trigger == "end"


@pytest.mark.parametrize("argv", [
    ["crash", "--model", ""], ["crash", "--model", ","], ["crash", "--model", "reorder,bogus"],
    ["crash", "--states", "abc"], ["crash", "--seed", "-1"], ["crash", "--workers", "-1"],
    ["crash", "--bus", "scsi"], ["crash", "--cuts", "often"], ["matrix", "--fs", "xfs,zfs"],
    ["matrix", "--disk-mib", "32"], ["matrix", "--trigger", "soon"], ["shell", "--disk-mib", "0"],
    ["disks", "--disk-mib", "x"],
])
def test_a_bad_value_is_refused_before_anything_runs(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--" + argv[1].lstrip("-") in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["--budget", "5", "--states", "3"], ["--states", "3", "--exhaustive"], ["--cuts", "flushes", "--states", "9"],
])
def test_states_beside_an_option_that_chooses_the_cuts_is_refused(argv, capsys, tmp_path):
    out = tmp_path / "out"
    assert main(["crash", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--states is not used with" in err and "Traceback" not in err
    assert not out.exists()


def test_states_alone_or_a_budget_alone_is_taken():
    from plugpull.runs.settings import refuse_unused_states
    refuse_unused_states(parsed("crash", "--states", "3"))
    refuse_unused_states(parsed("crash", "--budget", "5"))
    assert parsed("crash", "--budget", "5").states == 30  # the default, not typed: nothing to refuse


@pytest.mark.parametrize("change, where", [
    ("[crash]\nstates = \"10\"", "[crash] states"), ("[crash]\nmodels = [3]", "[crash] models[0]"),
    ("[crash]\ntrigger = 30", "[crash] trigger"), ("crash = 5", "crash"),
    ("[crash]\nmodels = []", "[crash] models"), ("[workload]\nfsync-files = 5", "[workload.fsync-files]"),
    ("[crash]\nseed = true", "[crash] seed"),
])
def test_a_case_field_of_the_wrong_type_is_named(tmp_path, change, where):
    text = CASE.replace('title = "t"', 'title = "t"\nworkload = 5') if change == "workload = 5" else CASE
    if change.startswith("crash ="):
        text = 'crash = 5\n' + CASE
    else:
        text += change + "\n"
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(CaseError) as e:
        load_case(path)
    assert f": {where}:" in str(e.value)


@pytest.mark.parametrize("table, field", [
    ("[hdd]\nflush_ms = 10\ncolour = 1\n", "colour"), ("[hdd]\nflush_ms = \"10\"\n", "flush_ms"),
    ("[hdd]\nflush_ms = -1\n", "flush_ms")])
def test_a_bad_disk_profile_is_named(tmp_path, table, field):
    path = tmp_path / "disks.toml"
    path.write_text(table)
    with pytest.raises(UsageError, match=rf"\[hdd\] {field}"):
        load_profiles(path)


def test_a_spec_resolves_once_into_the_real_objects():
    plan = CrashSpec(fs="ext4", mode="nobarrier", workload="fsync-files", params=(("count", 5),),
                     models=("cache:8:fifo",), trigger="acks:3").resolve()
    assert (plan.fs.name, plan.mode.name, plan.workload.count) == ("ext4", "nobarrier", 5)
    assert [str(m) for m in plan.models] == ["cache:8:fifo"] and str(plan.trigger) == "acks:3"
    with pytest.raises(UsageError, match="unknown workload"):
        CrashSpec(workload="nope").resolve()
