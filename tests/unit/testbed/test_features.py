"""Filesystem feature profiles (`--fs ext4+fast_commit`): a table of options, each refused where
it does not apply, and checked against the kernel before anything runs."""

import pytest

from tests.cli_run import run_cli
from plugpull import cli
from plugpull.errors import UsageError
from plugpull.guest.image.build import KernelSource
from plugpull.kernels.dotconfig import beside as kernel_config, read as read_config
from plugpull.testbed.features import FEATURES, check_kernel
from plugpull.testbed.fs import FILESYSTEMS, check_profiles, filesystem


def test_a_profile_is_its_base_with_the_options_mkfs_and_mount_words_and_the_base_rules():
    fs = filesystem("ext4+fast_commit+data=journal")
    assert fs.mkfs == ("mkfs.ext4", "-q", "-F", "-O", "fast_commit") and fs.mount_options == ("data=journal",)
    assert (fs.mount_type, fs.rules, fs.nobarrier_option) == ("ext4", "ext4", "nobarrier")
    strict = filesystem("f2fs-strict+compress")
    assert strict.mount_options == ("fsync_mode=strict", "compress_algorithm=lz4", "compress_extension=*")
    assert strict.rules == "f2fs" and strict.mkfs[-2:] == ("-O", "extra_attr,compression")
    assert "ext4+inline_data" in FILESYSTEMS and list(FILESYSTEMS) == [f.name for f in FILESYSTEMS.values()]


@pytest.mark.parametrize("name, words", [
    ("ext4+zstd", "unknown option 'zstd' for ext4; known: fast_commit, data=journal, inline_data"),
    ("xfs+fast_commit", "fast_commit is an option of ext4, not of xfs"),
    ("ext4+fast_commit+fast_commit", "fast_commit twice"),
    ("ext4+inline_data+fast_commit", "write it 'ext4+fast_commit+inline_data'"),
    ("ext4+", "unknown option ''"),
    ("zfs+compress", "unknown filesystem 'zfs+compress'"),
])
def test_a_wrong_profile_is_said_in_one_line(name, words):
    with pytest.raises(UsageError, match=words.replace("+", r"\+").replace("*", r"\*")):
        filesystem(name)
    assert name not in FILESYSTEMS


def test_every_option_says_where_its_kernel_and_promise_come_from():
    for f in FEATURES.values():
        assert f.source and f.summary and f.promise and f.since > (0, 0), f.name
        assert f.mkfs or f.mount, f.name
        assert any(fs.mount_type == f.fs for fs in FILESYSTEMS.values()), f.name


def test_a_kernel_too_old_or_built_without_a_symbol_is_refused():
    fs = filesystem("f2fs+compress")
    check_kernel(fs, "6.1.0-56-amd64", {"CONFIG_F2FS_FS_COMPRESSION": "y", "CONFIG_F2FS_FS_LZ4": "m"})
    check_kernel(fs, "6.1.0-56-amd64", None)  # no config at hand: the version alone
    with pytest.raises(UsageError, match="compress needs Linux 5.9 or later; this kernel is 5.8.0-1-amd64"):
        check_kernel(fs, "5.8.0-1-amd64", None)
    with pytest.raises(UsageError, match="built without CONFIG_F2FS_FS_LZ4, which compress needs"):
        check_kernel(fs, "6.1.0-56-amd64", {"CONFIG_F2FS_FS_COMPRESSION": "y", "CONFIG_F2FS_FS_LZ4": "n"})
    check_kernel(filesystem("ext4"), "2.6.32", None)  # no options, nothing to check


def test_the_config_is_found_beside_the_kernel_or_in_its_modules_tree(tmp_path):
    boot, modules = tmp_path / "boot", tmp_path / "lib" / "modules" / "6.1.0-x"
    boot.mkdir()
    modules.mkdir(parents=True)
    assert kernel_config(boot / "vmlinuz-6.1.0-x", modules) is None
    (modules / "config").write_text("# a comment\nCONFIG_F2FS_FS_LZ4=y\nCONFIG_LOCALVERSION=\"-x\"\n")
    assert read_config(kernel_config(boot / "vmlinuz-6.1.0-x", modules)) == {"CONFIG_F2FS_FS_LZ4": "y",
                                                                              "CONFIG_LOCALVERSION": "-x"}
    (boot / "config-6.1.0-x").write_text("CONFIG_F2FS_FS_LZ4=n\n")
    with pytest.raises(UsageError, match="CONFIG_F2FS_FS_COMPRESSION, CONFIG_F2FS_FS_LZ4"):
        check_profiles(["ext4", "f2fs+compress"], KernelSource(boot / "vmlinuz-6.1.0-x", modules))


def test_the_config_of_a_kernel_built_here_is_found_beside_its_image(tmp_path):
    """`kernels build` keeps `config` beside `bzImage` (kernels/build/store.py), not in the
    modules tree: its config symbols are checked too."""
    entry = tmp_path / "entries" / "k"
    modules = entry / "lib" / "modules" / "7.3.4-pp"
    modules.mkdir(parents=True)
    (entry / "bzImage").write_bytes(b"")
    (entry / "config").write_text("CONFIG_F2FS_FS_COMPRESSION=y\nCONFIG_F2FS_FS_LZ4=n\n")
    assert kernel_config(entry / "bzImage", modules) == entry / "config"
    with pytest.raises(UsageError, match="built without CONFIG_F2FS_FS_LZ4"):
        check_profiles(["f2fs+compress"], KernelSource(entry / "bzImage", modules))


def test_crash_with_an_option_its_kernel_lacks_is_refused_before_any_image(tmp_path, monkeypatch, capsys):
    import plugpull.cli.crash as crash_cli
    import plugpull.kernels
    boot, modules = tmp_path / "boot", tmp_path / "lib" / "modules" / "5.4.0-old"
    boot.mkdir()
    modules.mkdir(parents=True)
    (boot / "vmlinuz-5.4.0-old").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(plugpull.kernels, "kernel_option", lambda *a: KernelSource(boot / "vmlinuz-5.4.0-old", modules))
    monkeypatch.setattr(crash_cli, "prepare_rig", lambda *a, **k: pytest.fail("an image was made"))
    before = sorted(tmp_path.rglob("*"))
    assert cli.main(["crash", "--fs", "ext4+fast_commit", "--states", "2"]) == 2
    assert "fast_commit needs Linux 5.10 or later; this kernel is 5.4.0-old" in capsys.readouterr().err
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("argv", [["crash", "--fs", "ext4+nope"], ["matrix", "--fs", "xfs,btrfs+fast_commit"],
                                  ["hunt", "--seq", "1", "--fs", "ext4+data=journal+fast_commit"]])
def test_a_wrong_profile_on_the_command_line_is_exit_2(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert "filesystem" in err and not list(tmp_path.iterdir())


def test_btrfs_without_no_holes_is_a_mkfs_feature_and_commit_a_mount_option():
    """btrfs/206 and generic/695 run on btrfs made without no-holes (btrfs-progs' default since
    5.15), 206 with commit=1: the profile's words are mkfs's and mount's own."""
    fs = filesystem("btrfs+holes+commit=1")
    assert fs.mkfs == ("mkfs.btrfs", "-q", "-f", "-O", "^no-holes") and fs.mount_options == ("commit=1",)
    assert (fs.mount_type, fs.rules, fs.features) == ("btrfs", "btrfs", ("holes", "commit=1"))
    assert filesystem("btrfs+holes").mount_options == filesystem("btrfs").mount_options
    with pytest.raises(UsageError, match=r"write it 'btrfs\+holes\+commit=1'"):
        filesystem("btrfs+commit=1+holes")
    with pytest.raises(UsageError, match="holes is an option of btrfs, not of ext4"):
        filesystem("ext4+holes")
    with pytest.raises(UsageError, match=r"commit=1 needs Linux 3.12 or later; this kernel is 3.11.0"):
        check_kernel(fs, "3.11.0", None)
