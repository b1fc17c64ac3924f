"""kernels build without building: SPEC and build:NAME, names, the config fragment and its
check, the cache key, patches that apply and patches that do not, the tools and the disk."""

import subprocess
from pathlib import Path

import pytest

from plugpull import diskspace
from plugpull.errors import DiskFull, ToolMissing, UsageError
from plugpull.kernels.apt import Apt
from plugpull.kernels.build.debsrc import source_lists
from plugpull.kernels.lists import AptLists
from plugpull.kernels.sources import SUITES, Archive, parse_sources
from plugpull.kernels.build import config as kconfig
from plugpull.kernels.build.patches import check_patches, read_patch, touched_files, why_not
from plugpull.kernels.build.preflight import check_disk, check_tools, missing_tools
from plugpull.kernels.build.buildspec import TreeSource, check_name, default_name, parse_build, parse_build_source
from plugpull.kernels.build.store import build_key
from plugpull.kernels.option import kernel_option, kernel_options
from plugpull.kernels.naming import DebianKernel, Match


def kernel_tree(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "Makefile").write_text("all:\n")
    (root / "Kconfig").write_text("")
    (root / "fs").mkdir(exist_ok=True)
    (root / "fs" / "a.c").write_text("".join(f"int line{i};\n" for i in range(1, 21)))
    return root


def a_patch(path: Path, old: str, new: str, name: str = "fs/a.c") -> Path:
    path.write_text(f"--- a/{name}\n+++ b/{name}\n@@ -3,3 +3,3 @@\n int line2;\n-{old}\n+{new}\n int line4;\n")
    return path


def test_spec_is_a_debian_version_or_a_tree(tmp_path):
    assert parse_build_source("debian:7.3") == DebianKernel("7.3", Match.SERIES)
    tree = kernel_tree(tmp_path / "linux")
    assert parse_build_source(f"src:{tree}") == TreeSource(tree)
    for bad in ("7.3", "build:x", "debian:", "src:", f"src:{tmp_path / 'none'}", f"src:{tmp_path}",
                "src:~plugpull-no-such-user/linux"):
        with pytest.raises(UsageError):
            parse_build_source(bad)


def test_build_names_are_checked():
    assert parse_build("build:7.3.4-1-f2fs-first-fsync") == "7.3.4-1-f2fs-first-fsync"
    assert check_name("a+b_c.d-e") == "a+b_c.d-e"
    for bad in ("build:", "build:a/b", "build:a b", "build:..", "build:" + "x" * 101, "debian:7.3"):
        with pytest.raises(UsageError):
            parse_build(bad)


def test_the_default_name_is_the_version_and_the_patches(tmp_path):
    spec = DebianKernel("7.3", Match.SERIES)
    patches = [Path("suites/patches/f2fs-first-fsync.patch"), Path("x/btrfs link.diff")]
    assert default_name(spec, "7.3.4-1~bpo13+1", patches) == "7.3.4-1-f2fs-first-fsync-btrfs-link"
    assert default_name(spec, "7.3.4-1", []) == "7.3.4-1"
    assert default_name(TreeSource(tmp_path / "linux-next"), "", []) == "linux-next"
    check_name(default_name(spec, "1:7.3.4-1", [Path("ü?.patch")]))


def test_build_names_reach_every_kernel_option(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path))
    with pytest.raises(UsageError, match="no such build"):
        kernel_option("build:stock", None)
    with pytest.raises(UsageError, match="drop --modules"):
        kernel_option("build:stock", tmp_path)
    with pytest.raises(UsageError, match="no such build"):
        kernel_options(["host", "build:stock"], None)
    with pytest.raises(UsageError, match="build:NAME"):
        kernel_option("bulid:stock", None)


def test_the_fragment_states_what_the_guests_need():
    wanted = kconfig.parse_fragment(kconfig.FRAGMENT.read_text(), "ours")
    for option in ("CONFIG_DM_FLAKEY", "CONFIG_DM_LOG_WRITES", "CONFIG_DM_DELAY", "CONFIG_DM_CRYPT",
                   "CONFIG_DM_SNAPSHOT", "CONFIG_MD_RAID1", "CONFIG_MD_RAID456", "CONFIG_EXT4_FS",
                   "CONFIG_XFS_FS", "CONFIG_BTRFS_FS", "CONFIG_F2FS_FS", "CONFIG_SATA_AHCI", "CONFIG_ATA_PIIX",
                   "CONFIG_VIRTIO_PCI", "CONFIG_SCSI_VIRTIO", "CONFIG_VIRTIO_BLK", "CONFIG_VIRTIO_CONSOLE"):
        assert wanted[option] in ("y", "m"), option
    assert wanted["CONFIG_MODULE_SIG"] is None


def test_a_fragment_line_that_is_no_option_is_refused():
    assert kconfig.parse_fragment("# c\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=n\nCONFIG_A=m\n", "f") == \
        {"CONFIG_A": "m", "CONFIG_B": None, "CONFIG_C": None}
    with pytest.raises(UsageError, match="line 2"):
        kconfig.parse_fragment("CONFIG_A=y\nDM_FLAKEY=m\n", "f")


def test_merge_then_check_refuses_what_kconfig_dropped(tmp_path):
    config = tmp_path / ".config"
    config.write_text("CONFIG_A=y\nCONFIG_B=y\n# CONFIG_C is not set\nCONFIG_D=\"x\"\n")
    wanted = {"CONFIG_B": "m", "CONFIG_C": "y", "CONFIG_D": None}
    kconfig.merge(config, wanted)
    assert kconfig.unmet(config.read_text(), wanted) == []
    assert "CONFIG_A=y" in config.read_text()
    dropped = config.read_text().replace("CONFIG_C=y\n", "").replace("CONFIG_B=m", "CONFIG_B=y")  # olddefconfig's
    config.write_text(dropped)
    with pytest.raises(UsageError, match=r"CONFIG_B=m \(got y\), CONFIG_C=y \(got not set\)"):
        kconfig.check_config(config, wanted, "debian:7.3")


def test_the_user_fragment_comes_after_ours(tmp_path):
    mine = tmp_path / "mine.config"
    mine.write_text("CONFIG_F2FS_FS=y\n")
    text = kconfig.fragment_text(mine)
    assert text.startswith(kconfig.FRAGMENT.read_text())
    assert kconfig.parse_fragment(text, "both")["CONFIG_F2FS_FS"] == "y"
    mine.write_text("F2FS=y\n")
    with pytest.raises(UsageError, match="--config"):
        kconfig.fragment_text(mine)


def test_the_key_is_the_source_the_patches_in_order_and_the_config():
    one, two = b"--- a/x\n+++ b/x\n", b"--- a/y\n+++ b/y\n"
    key = build_key({"debian": "7.3.4-1"}, [one, two], "CONFIG_A=y\n")
    assert key == build_key({"debian": "7.3.4-1"}, [one, two], "CONFIG_A=y\n")
    others = {build_key({"debian": "7.3.4-1"}, [two, one], "CONFIG_A=y\n"),
              build_key({"debian": "7.3.4-1"}, [one, two + b" "], "CONFIG_A=y\n"),
              build_key({"debian": "7.3.4-1"}, [one], "CONFIG_A=y\n"),
              build_key({"debian": "7.3.4-2"}, [one, two], "CONFIG_A=y\n"),
              build_key({"debian": "7.3.4-1"}, [one, two], "CONFIG_A=m\n")}
    assert key not in others and len(others) == 5


def test_a_patch_that_applies_leaves_the_tree_as_it_was(tmp_path):
    tree = kernel_tree(tmp_path / "linux")
    before = (tree / "fs" / "a.c").read_text()
    first = a_patch(tmp_path / "first.patch", "int line3;", "int line3 = 1;")
    second = a_patch(tmp_path / "second.patch", "int line3 = 1;", "int line3 = 2;")
    check_patches(tree, [first, second])  # the second applies on the first
    assert (tree / "fs" / "a.c").read_text() == before
    assert sorted(p.name for p in tree.rglob("*")) == ["Kconfig", "Makefile", "a.c", "fs"]


def test_a_patch_that_does_not_apply_names_the_file_and_the_hunk(tmp_path):
    tree = kernel_tree(tmp_path / "linux")
    first = a_patch(tmp_path / "first.patch", "int line3;", "int line3 = 1;")
    stale = a_patch(tmp_path / "stale.patch", "int line3 = 9;", "int line3 = 2;")
    with pytest.raises(UsageError, match=r"--patch .*stale.patch: hunk #1 of fs/a.c does not apply \(at line 3\)"):
        check_patches(tree, [first, stale])
    with pytest.raises(UsageError, match=r"second.patch: fs/a.c: already applied"):
        check_patches(tree, [first, a_patch(tmp_path / "second.patch", "int line3;", "int line3 = 1;")])
    fuzzy = tmp_path / "fuzzy.patch"  # one context line differs: GNU patch's default fuzz would take it
    fuzzy.write_text("--- a/fs/a.c\n+++ b/fs/a.c\n@@ -2,3 +2,3 @@\n int line2_other;\n-int line3;\n+int line3 = 1;\n"
                     " int line4;\n")
    with pytest.raises(UsageError, match=r"fuzzy.patch: hunk #1 of fs/a.c does not apply"):
        check_patches(tree, [fuzzy])
    with pytest.raises(UsageError, match="a file the tree does not have"):
        check_patches(tree, [a_patch(tmp_path / "other.patch", "int line3;", "int x;", "fs/b.c")])
    assert (tree / "fs" / "a.c").read_text().count("line3;") == 1


def test_patch_files_are_checked_before_anything(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        read_patch(tmp_path / "none.patch")
    (tmp_path / "empty.patch").write_text("not a diff\n")
    with pytest.raises(UsageError, match="holds no diff"):
        read_patch(tmp_path / "empty.patch")
    with pytest.raises(UsageError, match="a directory"):
        read_patch(tmp_path)


def test_touched_files_are_the_tree_paths_once_each():
    data = (b"diff --git a/fs/x.c b/fs/x.c\n--- a/fs/x.c\n+++ b/fs/x.c\n"
            b"--- /dev/null\n+++ b/fs/new.c\t2026-01-01\n--- a/../etc/passwd\n")
    assert touched_files(data) == ["fs/x.c", "fs/new.c"]
    assert "already applied" in why_not("patching file fs/x.c\nReversed (or previously applied) patch detected!")


def test_missing_tools_are_named_with_their_packages(tmp_path):
    lacking = missing_tools(which=lambda t: None if t in ("flex", "bc") else "/usr/bin/" + t,
                            exists=lambda p: "gelf" not in p)
    assert lacking == [("flex", "flex"), ("bc", "bc"), ("/usr/include/gelf.h", "libelf-dev")]
    assert missing_tools(which=lambda t: "/bin/" + t, exists=lambda p: True) == []
    assert issubclass(ToolMissing, Exception)
    if not missing_tools():
        check_tools()


def test_too_little_disk_is_a_harness_failure_saying_how_much_is_needed(tmp_path, monkeypatch):
    """Not the user's input but the host's: exit 3 (DiskFull), as running out mid-build is."""
    monkeypatch.setattr(diskspace.shutil, "disk_usage", lambda p: type("U", (), {"free": 2**29})())
    with pytest.raises(DiskFull, match=rf"{tmp_path}/not/yet: this kernel build needs up to 6144 MiB, 512 MiB free "
                                       r"\(free some, or set PLUGPULL_CACHE elsewhere\)"):
        check_disk(tmp_path / "not" / "yet", 6 * 2**30)
    check_disk(tmp_path, 2**20)


def test_the_patch_tool_is_the_one_the_check_uses():
    assert subprocess.run(["patch", "--version"], capture_output=True).returncode == 0


def test_the_source_lists_are_a_deb_src_apt_of_the_kernels_suite_only(tmp_path):
    archive = Archive("http://mirror.invalid/debian", Path("/usr/share/keyrings/debian-archive-keyring.gpg"), SUITES)
    kernels = type("K", (), {"root": tmp_path, "apt": AptLists(tmp_path / "apt", archive)})()
    lists = source_lists(kernels, ("trixie-backports",))
    assert lists.root == tmp_path / "apt-src" / "trixie-backports"
    assert lists.wanted.suites == ("trixie-backports",) and lists.types == ("deb-src",)
    text = Apt(tmp_path / "x", lists.wanted, lists.types).sources_text()
    assert text.startswith("Types: deb-src\n") and "Suites: trixie-backports\n" in text
    assert parse_sources(text, deb822=True) == []  # never read as the binary lists' archive
    assert parse_sources(text, deb822=True, kind="deb-src")[0]["uris"] == ["http://mirror.invalid/debian"]
    assert parse_sources("deb-src http://m.invalid/debian sid main\n", deb822=False) == []


def test_a_case_file_and_the_kernel_list_take_a_build_name():
    from plugpull.runs.settings import kernel_name
    kernel_name("build:7.3.4-1-fixed")
    kernel_name("debian:7.3")
    with pytest.raises(UsageError, match="a build's name"):
        kernel_name("build:a/b")


def test_a_git_trees_identity_is_its_head_and_its_changes(tmp_path):
    from plugpull.kernels.build.worktree import tree_identity
    tree = kernel_tree(tmp_path / "linux")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run([*git, *args], check=True)
    clean = tree_identity(tree)
    assert clean == tree_identity(tree) and len(clean["head"]) == 40
    index = (tree / ".git" / "index").stat().st_mtime_ns
    (tree / "fs" / "a.c").write_text("int changed;\n")
    changed = tree_identity(tree)
    (tree / "fs" / "new.c").write_text("int new;\n")
    untracked = tree_identity(tree)
    assert len({clean["dirty"], changed["dirty"], untracked["dirty"]}) == 3
    assert (tree / ".git" / "index").stat().st_mtime_ns == index  # asking git wrote nothing


def test_a_tree_outside_git_is_known_by_its_files(tmp_path):
    from plugpull.kernels.build.worktree import tree_identity
    tree = kernel_tree(tmp_path / "linux")
    first = tree_identity(tree)
    assert "head" not in first and first == tree_identity(tree)
    (tree / "fs" / "a.c").write_text("int other_size;\n")
    assert tree_identity(tree) != first


def test_a_debian_work_copy_patches_its_own_files_never_the_source(tmp_path):
    from plugpull.kernels.build.worktree import Workspace
    source = kernel_tree(tmp_path / "source")
    before = (source / "fs" / "a.c").read_text()
    work = Workspace(tmp_path / "work", source, copied=True, pristine=True)
    work.prepare([a_patch(tmp_path / "one.patch", "int line3;", "int line3 = 1;")])
    assert (source / "fs" / "a.c").read_text() == before
    assert "line3 = 1;" in (work.tree / "fs" / "a.c").read_text()
    assert (work.tree / "Makefile").stat().st_ino == (source / "Makefile").stat().st_ino  # linked, not copied
    patched = (work.tree / "fs" / "a.c").stat().st_mtime_ns
    work.prepare([])
    assert (work.tree / "fs" / "a.c").read_text() == before
    assert (work.tree / "fs" / "a.c").stat().st_mtime_ns >= patched  # make sees it change again
    assert (work.tree / "fs" / "a.c").stat().st_ino != (source / "fs" / "a.c").stat().st_ino


def test_only_options_the_tree_declares_are_asked(tmp_path):
    (tmp_path / "arch").mkdir()
    (tmp_path / "Kconfig").write_text("config OLD\n\tbool \"old\"\nmenuconfig MENU\n\tbool\n")
    (tmp_path / "arch" / "Kconfig.debug").write_text("  config  DEEP \n")
    asked = ["CONFIG_OLD", "CONFIG_MENU", "CONFIG_DEEP", "CONFIG_DEBUG_INFO_NONE", "CONFIG_OLDER"]
    assert kconfig.defined(tmp_path, asked) == {"CONFIG_OLD", "CONFIG_MENU", "CONFIG_DEEP"}


@pytest.mark.parametrize("spec", ["debian:zz", "debian:", "debian:6.12 x"])
def test_a_bad_spec_is_said_as_kernels_build_took_it_not_as_a_kernel_option(spec):
    with pytest.raises(UsageError) as e:
        parse_build_source(spec)
    assert str(e.value).startswith(f"kernels build {spec}") and "--kernel" not in str(e.value)
