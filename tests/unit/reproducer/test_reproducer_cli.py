"""The reproducer's command line, without a guest: a saved state gives its workload and point;
`--out` writes the fstests test (named as fstests names it) and its golden output, without it the
script is printed; bad input (and a refused run) exits 2 in one line and writes nothing."""

import json
import os
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from plugpull.errors import UsageError
from plugpull.reproducer import case_for, state_target
from plugpull.reproducer.flakey import fstests_test, script
from plugpull.reproducer.fstests import golden


def run(argv, capsys):
    return run_cli(["reproducer", *argv], capsys)


def a_state(where: Path, workload: str, required: int = 2) -> Path:
    where.mkdir()
    (where / "state.json").write_text(json.dumps({"fs": "btrfs", "workload": workload, "acks_required": required,
                                                  "model": "prefix"}))
    return where


def test_a_saved_state_gives_its_workload_and_point(tmp_path):
    state = a_state(tmp_path / "s", "gen:seq2-080435")
    assert state_target(state) == ("gen:seq2-080435", "btrfs", 1)


@pytest.mark.parametrize("argv", [["gen:seq9-000001", "--fs", "xfs"], ["gen:seq1-999999", "--fs", "xfs"],
                                  ["gen:seq1-000253"], ["gen:seq1-000253", "--fs", "zfs"],
                                  ["gen:seq1-000253", "--fs", "xfs", "--style", "bad"],
                                  ["gen:seq1-000253", "--fs", "xfs", "--point", "2"],
                                  ["gen:seq1-000253", "--fs", "xfs", "--out", "{dir}"],
                                  ["gen:seq1-000253", "--fs", "xfs", "--style", "fstests", "--run"],
                                  ["gen:seq1-000253", "--fs", "xfs", "--kernel", "debian:6.12"],
                                  ["{state}"], ["{zero}"], ["{dir}/missing"], ["bonnie", "--fs", "xfs"],
                                  ["gen:seq1l-000131", "--fs", "btrfs"]])
def test_bad_input_exits_2_and_writes_nothing(argv, tmp_path, capsys):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    names = {"dir": out_dir, "state": a_state(tmp_path / "st", "bonnie"),
             "zero": a_state(tmp_path / "z", "gen:seq1-000253", required=0)}
    argv = [a.format(**names) for a in argv] + ["--out", str(out_dir / "repro")] * ("--out" not in argv)
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert list(out_dir.iterdir()) == []


def test_the_fstests_form_is_named_as_fstests_names_it(capsys, tmp_path):
    text = fstests_test(case_for("gen:seq2-080435", "btrfs"), "901")
    assert "YEAR NAME" not in text and "Copyright (c) 20" in text and "common/filter" not in text
    assert '[ "$FSTYP" = "btrfs" ] && _fixed_by_kernel_commit 953902e4fb4c' in text
    assert "_fixed_by_kernel_commit" not in fstests_test(case_for("gen:seq2-056383", "btrfs"), "901")
    code, out, err = run(["gen:seq2-080435", "--fs", "btrfs", "--style", "fstests", "--out", str(tmp_path / "btrfs_900")],
                         capsys)
    assert code == 2 and "NNN" in err and list(tmp_path.iterdir()) == []


def test_out_writes_the_test_and_its_golden_output(tmp_path, capsys):
    code, out, err = run(["gen:seq2-080435", "--fs", "btrfs", "--style", "fstests", "--out", str(tmp_path / "901")],
                         capsys)
    assert code == 0 and out == ""
    case = case_for("gen:seq2-080435", "btrfs")
    assert (tmp_path / "901").read_text() == fstests_test(case, "901")
    assert (tmp_path / "901.out").read_text() == golden(case, "901")
    assert os.access(tmp_path / "901", os.X_OK)


def test_without_out_the_script_is_printed(capsys):
    code, out, _ = run(["gen:seq1-000253", "--fs", "ext4"], capsys)
    assert code == 0 and out == script(case_for("gen:seq1-000253", "ext4"))
    assert "EVERYTHING ON DEVICE IS ERASED" in out and "mkfs.ext4" in out


def test_a_saved_state_is_reproduced_at_its_point(tmp_path, capsys):
    state = a_state(tmp_path / "s", "gen:seq2-080435", required=2)  # acks 0 and 1: point 1
    code, out, _ = run([str(state)], capsys)
    assert code == 0 and out == script(case_for("gen:seq2-080435", "btrfs", 1))
    code, out, _ = run([str(state), "--fs", "xfs", "--point", "2"], capsys)
    assert code == 0 and out == script(case_for("gen:seq2-080435", "xfs", 2))


def test_a_refused_run_writes_no_out(tmp_path, capsys, monkeypatch):
    """--run with a kernel that is refused (not in the archive, or a file that is no kernel)
    says so before --out is written."""
    import plugpull.kernels

    (tmp_path / "bz").write_bytes(b"not a kernel\n" * 400)
    (tmp_path / "m").mkdir()
    out = tmp_path / "repro.sh"
    code, _, err = run(["gen:seq1-000253", "--fs", "xfs", "--run", "--kernel", str(tmp_path / "bz"), "--modules",
                        str(tmp_path / "m"), "--out", str(out)], capsys)
    assert code == 2 and "not a kernel" in err and len(err.splitlines()) == 1 and not out.exists()

    def no_such_kernel(kernel, modules):
        raise UsageError(f"--kernel {kernel}: no such kernel in the archive")
    monkeypatch.setattr(plugpull.kernels, "kernel_option", no_such_kernel)
    code, _, err = run(["gen:seq1-000253", "--fs", "xfs", "--run", "--kernel", "debian:9.9", "--out", str(out)], capsys)
    assert code == 2 and "no such kernel" in err and len(err.splitlines()) == 1 and not out.exists()


def test_messages_blame_what_was_given(tmp_path, capsys):
    """--fs missing names every filesystem the reproducer makes; a state's own bad fs or
    point is said of its state.json, not of the --fs or --point the user did not give."""
    from plugpull.reproducer import FILESYSTEMS
    code, _, err = run(["gen:seq1-000253"], capsys)
    assert code == 2 and all(fs in err for fs in FILESYSTEMS), err
    state = a_state(tmp_path / "many", "gen:seq2-080435", required=9)
    code, _, err = run([str(state)], capsys)
    assert code == 2 and f"{state}/state.json: acks_required is 9" in err and "--point 8" not in err, err
    (tmp_path / "zfs").mkdir()
    (tmp_path / "zfs" / "state.json").write_text(json.dumps({"fs": "zfs", "workload": "gen:seq2-080435",
                                                               "acks_required": 2}))
    code, _, err = run([str(tmp_path / "zfs")], capsys)
    assert code == 2 and "state.json: its fs is 'zfs'" in err and "--fs 'zfs'" not in err, err


def test_a_target_too_long_to_look_up_is_bad_input_in_one_short_line(tmp_path, monkeypatch, capsys):
    """A name longer than the system lets one be (ENAMETOOLONG) was a harness failure, exit 3."""
    from tests.cli_run import refused

    monkeypatch.chdir(tmp_path)
    err = refused(["reproducer", "a" * 20000], capsys, "File name too long")
    assert len(err) < 400 and not list(tmp_path.iterdir())
