"""Bad input to hunt, generate and every command's options: one line, exit 2, nothing made,
before any image is built or guest booted (hardening round three's probes)."""

import json

import pytest

from tests.cli_run import run_cli
from plugpull import cli

from plugpull.hunt.hunter import HuntSpec

HUNT_SETTINGS = HuntSpec(1, sample=1).settings("0.0-another-kernel")


class Started(BaseException):
    """A stand-in for the first step of real work: reaching it means the input was taken."""


@pytest.fixture(autouse=True)
def no_real_work(tmp_path, monkeypatch):
    import plugpull.guest.image.build as image
    import plugpull.guest.rig as rig

    def start(*a, **k):
        raise Started
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(rig, "prepare_rig", start)
    monkeypatch.setattr(image, "build_image", start)


def refused(tmp_path, capsys, argv, *words) -> None:
    __tracebackhide__ = True
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert err.count("\n") == 1 and len(err) < 300, err
    assert all(w in err for w in words), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "a refusal made something"


@pytest.mark.parametrize("argv, words", [
    (["generate", "--show", "seq1-" + "1" * 5000], ["bad workload id", "5007 characters"]),
    (["generate", "--seq", "1", "--sample", "1500"], ["--sample 1500", "only 1488"]),
    (["generate", "--seq", "1", "--ops", "fsync,creat,fsync"], ["--ops", "fsync is given twice"]),
    (["hunt", "--seq", "1", "--ops", "sync,sync"], ["--ops", "sync is given twice"]),
    (["hunt", "--seq", "1", "--budget", "\u0669\u0660s"], ["--budget"]),
    (["hunt", "--seq", "1", "--budget", "\uff19\uff10m"], ["--budget"]),
    (["reproduce", "case.toml", "--scale", "\uff10.\uff15"], ["--scale"]),
    (["hunt", "--seq", "1", "--fs", "xfs", "--disk-mib", "64", "--out", "h"], ["--disk-mib 64", "300 MiB"]),
    (["hunt", "--seq", "1", "--fs", "btrfs", "--disk-mib", "100"], ["--disk-mib 100", "110 MiB"]),
    (["crash", "--fs", "xfs", "--disk-mib", "64"], ["--disk-mib 64", "mkfs.xfs"]),
    (["generate", "--seq", "1", "--seed", "1", "--seed=2"], ["--seed is given twice"]),
    (["scheduler", "--port", "0", "--port", "1"], ["--port", "given twice"]),
    (["hunt", "--seq", "1", "--fs", "ext4", "--fs", "xfs"], ["--fs is given twice"]),
    (["hunt", "--seq", "1", "--connect", "qemu:///session"], ["--connect is not for it"]),
    # round four: a space in a value, a budget too small to judge anything, options without their partner
    (["hunt", "--seq", "1", "--fsck", "every:1 "], ["--fsck", "'every:1 ' has a space"]),
    (["hunt", "--seq", "1", "--kernel", "debian:6.12 ,host"], ["--kernel", "has a space"]),
    (["crash", "--kernel", "host "], ["--kernel", "has a space"]),
    (["generate", "--seq", "1", "--sample", " 3"], ["--sample", "has a space"]),
    (["generate", "--seq", "1", "--ops", "rename, fsync"], ["--ops", "has a space"]),
    (["matrix", "--fs", "xfs ,ext4"], ["--fs", "has a space"]),
    (["hunt", "--seq", "1", "--budget", "0.001s"], ["--budget", "from 30s"]),
    (["hunt", "--seq", "1", "--budget", "29s"], ["--budget", "from 30s"]),
    (["generate", "--seq", "1", "--fs", "xfs"], ["--fs goes with --owed"]),
    (["generate", "--seq", "1", "--list", "--seed", "3"], ["--seed goes with --sample"]),
    (["generate", "--seq", "1", "--seed", "3"], ["--seed goes with --sample"]),
])
def test_bad_options_are_refused_in_one_line(tmp_path, capsys, argv, words):
    refused(tmp_path, capsys, argv, *words)


@pytest.mark.parametrize("held", ["[1, 2]", "null", '"text"'])
def test_settings_that_are_not_an_object_are_refused(tmp_path, capsys, held):
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "hunt.json").write_text(held)
    refused(tmp_path, capsys, ["hunt", "--seq", "1", "--out", "h"], "hunt.json", "not a hunt's settings")


def test_another_hunts_out_is_refused_before_the_image_and_its_log_is_left_alone(tmp_path, capsys):
    out = tmp_path / "h"
    out.mkdir()
    (out / "hunt.json").write_text(json.dumps(HUNT_SETTINGS))
    (out / "hunt.log").write_text("the other hunt's log\n")
    refused(tmp_path, capsys, ["hunt", "--seq", "1", "--sample", "2", "--out", "h"], "other settings", "sample 1 there")
    assert (out / "hunt.log").read_text() == "the other hunt's log\n"


def test_the_same_hunts_out_goes_on_to_the_guest(tmp_path):
    """The early check leaves out only the kernel: the same settings get as far as the rig."""
    out = tmp_path / "h"
    out.mkdir()
    (out / "hunt.json").write_text(json.dumps({**HUNT_SETTINGS, "sample": 2}))
    with pytest.raises(Started):
        cli.main(["hunt", "--seq", "1", "--sample", "2", "--out", "h"])


def test_a_cache_that_is_a_file_is_refused(tmp_path, capsys, monkeypatch):
    (tmp_path / "cachefile").write_text("")
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cachefile"))
    refused(tmp_path, capsys, ["hunt", "--seq", "1", "--sample", "1", "--out", "h"], f"{tmp_path / 'cachefile'}",
            "PLUGPULL_CACHE")


def test_a_full_disk_is_said_with_the_hunts_directory(tmp_path, capsys, monkeypatch):
    """A write that finds no space (here the guest's start) names where plugpull was writing."""
    import errno

    import plugpull.guest.rig as rig

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(rig, "prepare_rig", full)
    assert cli.main(["hunt", "--seq", "1", "--sample", "1", "--out", "h"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no space left on h" in err, err
