"""What `kernels build` reads of the user's files (--patch, --config): regular files only, opened
without waiting, read up to a bound; a FIFO, a device, a binary fragment or a file too large is
one line naming the option, exit 2, and nothing made. A hang fails the test (SIGALRM). No VM."""

import os

import pytest

from plugpull.kernels.build import builder
from tests.cli_run import files_under, refused
from tests.unit.kernels.test_build import a_patch, kernel_tree
from tests.unit.misc.test_fifo_inputs import deadline  # noqa: F401 (a fixture)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(builder, "check_tools", lambda: None)  # the inputs are refused before any tool counts
    return kernel_tree(tmp_path / "linux")


def build(tree, *options) -> list:
    return ["kernels", "build", f"src:{tree}", *options]


@pytest.mark.parametrize("option", ["--config", "--patch"])
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_fifo_or_a_device_is_refused_naming_the_option(option, kind, tree, tmp_path, capsys, deadline):  # noqa: F811
    path = tmp_path / "input"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    before = files_under(tmp_path)
    what = "a FIFO" if kind == "fifo" else "a character device"
    refused(build(tree, option, path), capsys, f"{option} {path}: {what}, not a regular file")
    assert files_under(tmp_path) == before


def test_a_binary_config_is_bad_input_not_a_harness_failure(tree, tmp_path, capsys):
    for name, data in (("elf", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256))), ("nul", b"CONFIG_A=y\n\0\n")):
        (tmp_path / name).write_bytes(data)
        refused(build(tree, "--config", tmp_path / name), capsys, f"--config {tmp_path / name}: not a text file")
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("option", ["--config", "--patch"])
def test_a_file_larger_than_its_bound_is_refused_unread(option, tree, tmp_path, capsys):
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(1 << 40)  # sparse: a terabyte that takes no space
    refused(build(tree, option, big), capsys, f"{option} {big}: larger than the", "plugpull reads of such a file")


def test_a_good_patch_and_fragment_pass_the_reading(tree, tmp_path, capsys, monkeypatch):
    """The same reader lets good files through: the run gets past them, to the (stubbed) build."""
    (tmp_path / "frag").write_text("CONFIG_EXT4_FS=y\n")
    patch = a_patch(tmp_path / "fix.patch", "int line3;", "int x;")
    seen = []

    def workspace_for(plan, *rest):
        seen.append((plan.patch_bytes, plan.fragment))
        raise SystemExit(0)
    monkeypatch.setattr(builder, "workspace_for", workspace_for)
    with pytest.raises(SystemExit):
        builder.build_kernel(builder.BuildRequest(builder.TreeSource(tree), [patch], None, tmp_path / "frag"))
    assert seen[0][0] == [patch.read_bytes()] and seen[0][1].endswith("CONFIG_EXT4_FS=y\n")
