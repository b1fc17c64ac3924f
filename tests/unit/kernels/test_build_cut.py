"""kernels build, round two: the config cut to the guest (options only some versions declare),
the ETA estimated from a tree, ccache, and `--revert`."""

import tomllib
from pathlib import Path

import pytest

from plugpull.cli import main
from plugpull.errors import UsageError
from plugpull.kernels.build import config as kconfig
from plugpull.kernels.build.estimate import count, estimated_lines
from plugpull.kernels.build.make import Make
from plugpull.kernels.build.patches import Change, check_patches
from plugpull.kernels.build.buildspec import default_name, parse_build_source
from plugpull.kernels.build.store import build_key
from plugpull.kernels.build.worktree import Workspace
from plugpull.paths import ROOT
from plugpull.cli.kernels import cache_kinds
from plugpull.prune import prune
from tests.unit.kernels.test_build import a_patch, kernel_tree
from tests.unit.kernels.test_builder import build, calls, store, tree  # noqa: F401 (tree: a fixture)


def test_a_line_marked_with_versions_is_asked_only_of_those():
    text = ("CONFIG_A=y\nCONFIG_NEW=y  # in 5.18+\n# CONFIG_OLD is not set  # in -6.1\n"
            "CONFIG_MID=m # in 5.6-6.1\n")
    assert kconfig.parse_fragment(text, "f") == {"CONFIG_A": "y", "CONFIG_NEW": "y", "CONFIG_OLD": None,
                                                 "CONFIG_MID": "m"}
    assert kconfig.parse_fragment(text, "f", (5, 10)) == {"CONFIG_A": "y", "CONFIG_OLD": None, "CONFIG_MID": "m"}
    assert kconfig.parse_fragment(text, "f", (6, 1)) == {"CONFIG_A": "y", "CONFIG_NEW": "y", "CONFIG_OLD": None,
                                                         "CONFIG_MID": "m"}
    assert kconfig.parse_fragment(text, "f", (7, 3)) == {"CONFIG_A": "y", "CONFIG_NEW": "y"}
    assert kconfig.parse_fragment(text, "f", (5, 4)) == {"CONFIG_A": "y", "CONFIG_OLD": None}
    with pytest.raises(UsageError, match="line 1: '# in 5.18'"):
        kconfig.parse_fragment("CONFIG_NEW=y  # in 5.18\n", "f")


def test_ours_marks_the_options_only_newer_kernels_have():
    ours = kconfig.FRAGMENT.read_text()
    assert "CONFIG_DEBUG_INFO_NONE" in kconfig.parse_fragment(ours, "ours", (5, 18))
    assert "CONFIG_DEBUG_INFO_NONE" not in kconfig.parse_fragment(ours, "ours", (5, 10))
    assert kconfig.parse_fragment(ours, "ours", (5, 10))["CONFIG_BTRFS_FS"] == "m"


@pytest.mark.parametrize("version", [(5, 10), (7, 3)])
def test_every_required_module_has_its_option_asked(version):
    """images/guest.toml's required modules, each built (m or y) by an option ours asks for."""
    option_of = {"ahci": "SATA_AHCI", "ata_piix": "ATA_PIIX", "virtio_scsi": "SCSI_VIRTIO", "sd_mod": "BLK_DEV_SD",
                 "virtio_pci": "VIRTIO_PCI", "virtio_console": "VIRTIO_CONSOLE", "virtio_blk": "VIRTIO_BLK",
                 "xfs": "XFS_FS", "ext4": "EXT4_FS", "btrfs": "BTRFS_FS", "dm_mod": "BLK_DEV_DM",
                 "dm_flakey": "DM_FLAKEY", "dm_log_writes": "DM_LOG_WRITES", "dm_delay": "DM_DELAY",
                 "loop": "BLK_DEV_LOOP", "md_mod": "BLK_DEV_MD", "raid1": "MD_RAID1", "raid456": "MD_RAID456",
                 "dm_crypt": "DM_CRYPT", "xts": "CRYPTO_XTS", "af_alg": "CRYPTO_USER_API_SKCIPHER",
                 "algif_skcipher": "CRYPTO_USER_API_SKCIPHER", "algif_hash": "CRYPTO_USER_API_HASH"}
    required = tomllib.loads((ROOT / "images" / "guest.toml").read_text())["kernel"]["modules"]
    assert sorted(required) == sorted(option_of)  # a module added there needs its line here
    wanted = kconfig.parse_fragment(kconfig.FRAGMENT.read_text(), "ours", version)
    assert [m for m in required if wanted.get(f"CONFIG_{option_of[m]}") not in ("y", "m")] == []


def test_the_tree_version_and_its_guest_config(tmp_path):
    root = kernel_tree(tmp_path / "linux")
    assert kconfig.tree_version(root) is None and kconfig.guest_config(root) is None
    (root / "Makefile").write_text("# SPDX\nVERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 4\n")
    (root / "arch" / "x86" / "configs").mkdir(parents=True)
    (root / "arch" / "x86" / "configs" / "kvm_guest.config").write_text("CONFIG_VIRTIO=y\n")
    assert kconfig.tree_version(root) == (7, 3) and kconfig.guest_config(root) == "kvm_guest.config"


def test_an_undeclared_option_is_named(tmp_path):
    (tmp_path / "Kconfig").write_text("config A\n")
    kconfig.refuse_undeclared(tmp_path, {"CONFIG_A": "y"}, "src:x")
    with pytest.raises(UsageError, match="src:x does not declare what was asked: CONFIG_B, CONFIG_C"):
        kconfig.refuse_undeclared(tmp_path, {"CONFIG_A": "y", "CONFIG_C": None, "CONFIG_B": "m"}, "src:x")


def declaring_tree(root: Path, version: str, lacks: set[str]) -> Path:
    """A tree of `version` whose Kconfig declares every option of ours but those it `lacks`."""
    major, minor = version.split(".")
    root.mkdir(parents=True, exist_ok=True)
    (root / "Makefile").write_text(f"VERSION = {major}\nPATCHLEVEL = {minor}\nSUBLEVEL = 0\n")
    options = kconfig.parse_fragment(kconfig.FRAGMENT.read_text(), "ours")
    (root / "Kconfig").write_text("".join(f"config {o.removeprefix('CONFIG_')}\n\tbool\n"
                                          for o in options if o not in lacks))
    return root


@pytest.mark.parametrize("version, lacks", [
    ("5.10", {"CONFIG_DEBUG_INFO_NONE"}),  # 5.10.223: DEBUG_INFO off is no info, the choice came in 5.18
    ("5.4", {"CONFIG_DEBUG_INFO_NONE", "CONFIG_F2FS_FS_COMPRESSION", "CONFIG_F2FS_FS_LZ4",
             "CONFIG_ETHTOOL_NETLINK"}),
])
def test_ours_asks_an_older_tree_only_what_its_kconfig_declares(tmp_path, version, lacks):
    """What ours marks for newer kernels is not asked of an older tree that lacks it; the
    same Kconfig said to be a newer kernel's is refused, naming what it lacks."""
    root = declaring_tree(tmp_path / "linux", version, lacks)
    wanted = kconfig.parse_fragment(kconfig.FRAGMENT.read_text(), "ours", kconfig.tree_version(root))
    kconfig.refuse_undeclared(root, wanted, f"debian:{version}")
    (root / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 4\n")
    wanted = kconfig.parse_fragment(kconfig.FRAGMENT.read_text(), "ours", kconfig.tree_version(root))
    with pytest.raises(UsageError, match=f"does not declare what was asked: {', '.join(sorted(lacks))} "):
        kconfig.refuse_undeclared(root, wanted, "debian:7.3")


def small_tree(root: Path) -> Path:
    """A tree whose Makefiles select objects the kbuild way."""
    files = {
        "Kbuild": "obj-y += init/ fs/\nobj-$(CONFIG_NET) += net/\n",
        "arch/x86/Makefile": "core-y += arch/x86/\n",
        "arch/x86/Kbuild": "obj-y += kernel/\n",
        "arch/x86/kernel/Makefile": "obj-y := head.o setup.o \\\n\tirq.o\n",
        "init/Makefile": "obj-y := main.o\nobj-$(CONFIG_OFF) += gone.o\n",
        "fs/Makefile": "obj-y += open.o\nobj-$(CONFIG_EXT4_FS) += ext4/\nobj-$(CONFIG_XFS_FS) += xfs/\n",
        "fs/ext4/Makefile": "obj-$(CONFIG_EXT4_FS) += ext4.o\next4-y := super.o inode.o\n"
                            "ext4-$(CONFIG_EXT4_FS_POSIX_ACL) += acl.o\next4-$(CONFIG_OFF) += no.o\n",
        "fs/xfs/Makefile": "obj-$(CONFIG_XFS_FS) += xfs.o\nxfs-y := a.o b.o c.o\n",
        "net/Makefile": "obj-y += socket.o\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_objects_a_config_builds_are_counted_from_the_makefiles(tmp_path):
    root = small_tree(tmp_path)
    config = {"CONFIG_EXT4_FS": "m", "CONFIG_EXT4_FS_POSIX_ACL": "y"}
    # head setup irq, main, open, ext4's super inode acl; no xfs, no net, nothing of CONFIG_OFF
    assert count(root, config) == (8, 1, 5)  # folders: init fs fs/ext4 arch/x86 arch/x86/kernel
    assert count(root, {**config, "CONFIG_XFS_FS": "y", "CONFIG_NET": "y"}) == (12, 1, 7)
    assert count(root, {}) == (5, 0, 4)
    assert estimated_lines(root, config) > estimated_lines(root, {})


def test_make_goes_through_ccache_when_given_its_folder(tmp_path):
    cache = tmp_path / "cache" / "kernels" / "builds" / "ccache"
    plain = Make(tmp_path / "src", tmp_path / "out", tmp_path / "log")
    through = Make(tmp_path / "src", tmp_path / "out", tmp_path / "log", ccache=cache)
    assert not any(a.startswith("CC=") for a in plain.argv("bzImage")) and "CCACHE_DIR" not in plain.env()
    assert "CC=ccache gcc" in through.argv("bzImage")
    assert through.env()["CCACHE_DIR"] == str(cache) and through.env()["CCACHE_BASEDIR"] == str(tmp_path / "cache")
    assert through.env()["CCACHE_DEPEND"] == "1" and "CCACHE_DEPEND" not in plain.env()


def test_a_build_through_ccache_has_the_key_of_one_without(tree, monkeypatch):  # noqa: F811
    from plugpull.kernels.build import builder
    monkeypatch.setattr(builder.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    through = build(tree, name="through")
    assert "CC=ccache gcc bzImage" in store().log(through.built.key).read_text()
    monkeypatch.setattr(builder.shutil, "which", lambda tool: None)  # no ccache on the host
    without = build(tree, name="without")
    assert without.cached and without.built.key == through.built.key


def test_ccache_is_pruned_like_the_other_kinds(tmp_path):
    import os
    kinds = [k for k in cache_kinds() if k.name == "kernels/builds/ccache"]
    assert len(kinds) == 1
    folder = tmp_path / "kernels" / "builds" / "ccache"
    for name in ("0", "1", "2"):
        (folder / name / "a").mkdir(parents=True)
    (folder / "ccache.conf").write_text("")
    for name in ("0", "1"):
        for path in (folder / name, folder / name / "a"):
            os.utime(path, (1, 1))
    outcome, = prune(tmp_path, kinds, 30, dry_run=False)
    assert sorted(p.name for p in outcome.removed) == ["0", "1"]
    assert sorted(p.name for p in folder.iterdir()) == ["2", "ccache.conf"]


def test_a_revert_takes_a_patch_out_in_order(tmp_path):
    root = kernel_tree(tmp_path / "linux")
    fix = a_patch(tmp_path / "fix.patch", "int line3;", "int line3 = 1;")
    with pytest.raises(UsageError, match=r"--revert .*fix.patch: fs/a.c: not in this tree, nothing to revert"):
        check_patches(root, [Change(fix, reverse=True)])
    check_patches(root, [fix, Change(fix, reverse=True)])  # applied, then taken out
    stale = a_patch(tmp_path / "stale.patch", "int line3 = 7;", "int line3 = 8;")
    with pytest.raises(UsageError, match=r"--revert .*stale.patch: hunk #1 of fs/a.c does not apply"):
        check_patches(root, [Change(stale, reverse=True)])
    fixed = kernel_tree(tmp_path / "fixed")
    (fixed / "fs" / "a.c").write_text((root / "fs" / "a.c").read_text().replace("int line3;", "int line3 = 1;"))
    work = Workspace(tmp_path / "work", fixed, copied=True, pristine=True)
    work.prepare([Change(fix, reverse=True)])
    assert "int line3;\n" in (work.tree / "fs" / "a.c").read_text()
    assert "line3 = 1" in (fixed / "fs" / "a.c").read_text()


def test_a_revert_is_its_own_key_and_name(tmp_path):
    one = b"--- a/x\n+++ b/x\n"
    assert build_key({"debian": "7.3.4-1"}, [one], "") == build_key({"debian": "7.3.4-1"}, [one], "", [False])
    assert build_key({"debian": "7.3.4-1"}, [one], "") != build_key({"debian": "7.3.4-1"}, [one], "", [True])
    source = parse_build_source("debian:7.3")
    patches = [Change(Path("a.patch")), Change(Path("fix.patch"), reverse=True)]
    assert default_name(source, "7.3.4-1~bpo13+1", patches) == "7.3.4-1-a-revert-fix"


def test_the_command_takes_reverts_in_order_with_patches(tree, tmp_path, capsys):  # noqa: F811
    fix = a_patch(tmp_path / "fix.patch", "int line3;", "int line3 = 1;")
    assert main(["kernels", "build", f"src:{tree}", "--patch", str(fix), "--revert", str(fix), "--name", "both"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "build:both"
    both = store().named("both")
    assert [p.get("reverse", False) for p in both.manifest["patches"]] == [False, True]
    assert both.source.kernel.read_text() == (tree / "fs" / "a.c").read_text()
    entries = sorted((store().root / "entries").iterdir())
    assert main(["kernels", "build", f"src:{tree}", "--revert", str(fix), "--patch", str(fix)]) == 2
    assert "--revert" in (err := capsys.readouterr().err) and "nothing to revert" in err
    assert sorted((store().root / "entries").iterdir()) == entries
    with pytest.raises(SystemExit) as refused:  # an option of kernels build only: argparse's one line
        main(["kernels", "--revert", str(fix)])
    assert refused.value.code == 2 and "unrecognized arguments: --revert" in capsys.readouterr().err
    from plugpull.cli.kernels import print_built
    from plugpull.kernels import Kernels
    capsys.readouterr()
    print_built(Kernels())
    assert "fix.patch revert:fix.patch" in capsys.readouterr().out
