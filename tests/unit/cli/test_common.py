"""The kernel every guest command resolves (cli/common: kernel_source, kernel_list) is where a
filesystem profile the kernel lacks is refused: one line, exit 2, no image, nothing written."""

import json
from pathlib import Path

import pytest

from plugpull import cli

OLD = "3.2.0-old"  # older than inline_data (3.8) and fast_commit (5.10)

CASE = """title = "t"
source = "s"
summary = "a case on a profile"

[matrix]
fs = ["ext4+inline_data"]
modes = ["barrier"]
workloads = ["fsync-files"]

[expect]
safe = ["barrier"]
"""


@pytest.fixture
def old_kernel(tmp_path, monkeypatch):
    """`--kernel FILE --modules DIR` of a kernel too old for any profile; a guest image asked
    of it fails the test."""
    import plugpull.guest.rig as rig_mod
    kernel, modules = tmp_path / "k" / "bzImage", tmp_path / "k" / "lib" / "modules" / OLD
    modules.mkdir(parents=True)
    kernel.write_bytes(b"\0" * 0x202 + b"HdrS" + b"\0" * 64)
    monkeypatch.setattr(rig_mod, "build_image", lambda *a, **k: pytest.fail("a guest image was made"))
    work = tmp_path / "w"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "case.toml").write_text(CASE)
    return ["--kernel", str(kernel), "--modules", str(modules)]


def a_state(where, fs: str):
    where.mkdir()
    (where / "state.json").write_text(json.dumps({"fs": fs, "model": "prefix", "cut": 0, "seed": 0, "digest": "d",
                                                  "verdict": "clean", "record": "../record"}))
    return str(where)


@pytest.mark.parametrize("argv, said", [
    (["reproduce", "case.toml"], "inline_data needs Linux 3.8"),
    (["crash", "--fs", "ext4+fast_commit", "--states", "2"], "fast_commit needs Linux 5.10"),
    (["matrix", "--fs", "xfs,ext4+inline_data"], "inline_data needs Linux 3.8"),
    (["hunt", "--seq", "1", "--fs", "ext4+fast_commit"], "fast_commit needs Linux 5.10"),
    (["faults", "--fs", "ext4+inline_data", "--fault", "error-writes@acks:1+3"], "inline_data needs Linux 3.8"),
    (["reproducer", "gen:seq1-000253", "--fs", "ext4+fast_commit", "--run"], "fast_commit needs Linux 5.10"),
])
def test_every_command_refuses_a_profile_its_kernel_lacks_before_any_image(argv, said, old_kernel, capsys):
    before = sorted(Path(".").rglob("*"))
    assert cli.main(argv + old_kernel) == 2
    err = capsys.readouterr().err
    assert said in err and f"this kernel is {OLD}" in err and len(err.splitlines()) == 1, err
    assert sorted(Path(".").rglob("*")) == before, "a refusal wrote something"


@pytest.mark.parametrize("command", ["replay", "minimise"])
def test_a_saved_states_profile_is_checked_against_the_kernel_it_is_rechecked_on(command, old_kernel, capsys,
                                                                                tmp_path):
    state = a_state(tmp_path / "s", "ext4+fast_commit")
    assert cli.main([command, state] + old_kernel) == 2
    err = capsys.readouterr().err
    assert "fast_commit needs Linux 5.10" in err and len(err.splitlines()) == 1, err


def test_a_kernel_that_has_the_profile_goes_on_to_the_image(old_kernel, tmp_path, monkeypatch, capsys):
    import plugpull.guest.rig as rig_mod

    class ImageAsked(Exception):
        pass

    monkeypatch.setattr(rig_mod, "build_image", lambda *a, **k: (_ for _ in ()).throw(ImageAsked()))
    new = tmp_path / "k" / "lib" / "modules" / "6.1.0-new"
    new.mkdir()
    assert cli.main(["reproduce", "case.toml", "--kernel", old_kernel[1], "--modules", str(new)]) == 3
    assert "ImageAsked" in capsys.readouterr().err


def test_a_kernel_list_is_resolved_once_and_checked_for_each_case(old_kernel, monkeypatch):
    import plugpull.kernels.option as option
    from plugpull.cli.common import kernel_list
    from plugpull.errors import UsageError
    resolved = []
    real = option.kernel_options
    monkeypatch.setattr(option, "kernel_options", lambda *a: resolved.append(a) or real(*a))
    args = cli.parser().parse_args(["reproduce", "case.toml"] + old_kernel)
    known = {}
    assert kernel_list(args, ["xfs"], ("host",), known)[0][1].release == OLD
    with pytest.raises(UsageError, match="inline_data needs Linux 3.8"):
        kernel_list(args, ["ext4+inline_data"], ("host",), known)
    assert len(resolved) == 1


def test_no_command_resolves_its_kernel_but_through_common():
    """kernel_source and kernel_list take the command's filesystems: a command that went to
    plugpull.kernels itself would skip the profile check. bisect builds each commit's kernel."""
    cli_dir = Path(cli.__file__).parent
    direct = [p.name for p in cli_dir.glob("*.py")
              if p.name not in ("common.py", "bisect.py") and "kernel_option" in p.read_text()]
    assert direct == []
