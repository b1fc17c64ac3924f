"""kernels build end to end on a fake kernel tree: a Makefile that answers kbuild's targets in a
few lines (its "kernel" is a copy of fs/a.c, so what a build compiled can be read back), and
records each call in the object folder. The user's tree must come out as it went in."""

import subprocess
from pathlib import Path

import pytest

from plugpull.cli import main
from plugpull import diskspace
from plugpull.errors import DiskFull, UsageError
from plugpull.kernels.build import BuildRequest, BuildStore, build_kernel, parse_build_source
from plugpull.kernels.build import builder, config as kconfig
from plugpull.kernels.build.make import BuildFailed
from plugpull.kernels.option import kernel_option
from plugpull.paths import cache_dir
from tests.unit.kernels.test_build import a_patch, kernel_tree

FAKE_MAKEFILE = r"""
VERSION = 1
PATCHLEVEL = 0
O ?= .
REL = 1.0.0$(shell sed -n 's/^CONFIG_LOCALVERSION="\(.*\)"/\1/p' $(O)/.config)
MODS = $(INSTALL_MOD_PATH)/lib/modules/$(REL)
allnoconfig:
	@echo "allnoconfig $(CURDIR)" >> $(O)/calls
	@printf 'CONFIG_64BIT=y\n' > $(O)/.config
kvm_guest.config:
	@echo kvm_guest.config >> $(O)/calls
	@cat kernel/configs/kvm_guest.config >> $(O)/.config
olddefconfig:
	@echo olddefconfig >> $(O)/calls
	@sed -i '/CONFIG_FAKE_DROPPED/d; /CONFIG_ADDED_IN_A_LATER_KERNEL/d' $(O)/.config
bzImage:
	@echo bzImage >> $(O)/calls
	@! grep -q BROKEN fs/a.c || (echo "fs/a.c:1: error: broken" && false)
	@mkdir -p $(O)/arch/x86/boot $(O)/include/config
	@echo "  CC      fs/a.o"; cat fs/a.c > $(O)/arch/x86/boot/bzImage
	@echo $(REL) > $(O)/include/config/kernel.release
modules:
	@echo "  CC [M]  fs/m.o"
modules_install:
	@mkdir -p $(MODS)/kernel/fs && touch $(MODS)/kernel/fs/m.ko $(MODS)/modules.builtin
	@echo "kernel/fs/m.ko:" > $(MODS)/modules.dep
	@ln -s $(O) $(MODS)/build
"""


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(builder, "check_tools", lambda: None)  # the fake tree needs only make
    root = kernel_tree(tmp_path / "linux")
    (root / "Makefile").write_text(FAKE_MAKEFILE)
    (root / "kernel" / "configs").mkdir(parents=True)
    (root / "kernel" / "configs" / "kvm_guest.config").write_text("CONFIG_EXT4_FS=y\n")
    declared = [*kconfig.parse_fragment(kconfig.FRAGMENT.read_text(), "ours"),
                "CONFIG_LOCALVERSION", "CONFIG_LOCALVERSION_AUTO", "CONFIG_FAKE_DROPPED"]
    (root / "Kconfig").write_text("".join(f"config {option.removeprefix('CONFIG_')}\n" for option in declared))
    return root


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def build(tree, patches=(), name=None, config=None, beside=False):
    return build_kernel(BuildRequest(parse_build_source(f"src:{tree}"), list(patches), name, config, beside))


def store() -> BuildStore:
    return BuildStore(cache_dir() / "kernels" / "builds")


def calls() -> list[str]:
    outs = (store().root / "work").glob("*/out/calls")
    return [line for f in outs for line in f.read_text().splitlines()]


def test_a_tree_is_built_out_of_tree_and_left_untouched(tree):
    before = snapshot(tree)
    result = build(tree, name="mine")
    assert snapshot(tree) == before and not (tree / ".config").exists()
    assert result.spec == "build:mine" and not result.cached
    source = kernel_option("build:mine", None)
    assert source.kernel.read_text() == (tree / "fs" / "a.c").read_text()
    assert (source.modules_dir / "modules.dep").is_file() and not (source.modules_dir / "build").exists()
    assert source.release == f"1.0.0-{result.built.key[:8]}"
    assert calls() == [f"allnoconfig {tree}", "kvm_guest.config", "olddefconfig", "bzImage"]


def test_the_same_build_again_is_cached_and_runs_no_make(tree):
    first = build(tree, name="mine")
    again = build(tree, name="mine")
    assert again.cached and again.built.key == first.built.key
    assert calls().count("bzImage") == 1
    (tree / "fs" / "a.c").write_text("int changed;\n")  # the tree's state is in the key
    assert not build(tree, name="changed").cached


def test_a_patched_build_holds_its_patches_and_no_others(tree, tmp_path):
    before = snapshot(tree)
    one = a_patch(tmp_path / "one.patch", "int line3;", "int line3 = 1;")
    two = tmp_path / "two.patch"
    two.write_text("--- a/fs/a.c\n+++ b/fs/a.c\n@@ -4,3 +4,3 @@\n int line3;\n-int line4;\n+int line4 = 2;\n"
                   " int line5;\n")
    first = build(tree, [one])
    assert first.name == "linux-one" and "line3 = 1;" in first.built.source.kernel.read_text()
    second = build(tree, [two])
    text = second.built.source.kernel.read_text()
    assert "line4 = 2;" in text and "line3 = 1;" not in text
    assert build(tree, []).built.source.kernel.read_text() == (tree / "fs" / "a.c").read_text()
    assert snapshot(tree) == before


def test_a_name_is_given_to_one_build_only(tree, tmp_path):
    build(tree, name="taken")
    patch = a_patch(tmp_path / "p.patch", "int line3;", "int line3 = 1;")
    entries = sorted((store().root / "entries").iterdir())
    with pytest.raises(UsageError, match="already names another build"):
        build(tree, [patch], name="taken")
    assert sorted((store().root / "entries").iterdir()) == entries
    assert build(tree, name="also").cached  # the same build under a second name


def test_a_config_kconfig_drops_is_refused_and_nothing_cached(tree, tmp_path):
    mine = tmp_path / "mine.config"
    mine.write_text("CONFIG_FAKE_DROPPED=y\n")
    with pytest.raises(UsageError, match=r"CONFIG_FAKE_DROPPED=y \(got not set\)"):
        build(tree, name="dropped", config=mine)
    assert not (store().root / "entries").exists() and store().named("dropped") is None
    assert not list((store().root / "logs").iterdir())


def test_a_tree_configured_in_place_is_refused(tree):
    (tree / ".config").write_text("CONFIG_64BIT=y\n")
    with pytest.raises(UsageError, match=r"configured in the tree itself \(.config\)"):
        build(tree)


def test_a_failing_build_keeps_its_log_and_caches_nothing(tree, tmp_path):
    broken = a_patch(tmp_path / "broken.patch", "int line3;", "BROKEN")
    with pytest.raises(BuildFailed, match="fs/a.c:1: error: broken; the build log is ") as failed:
        build(tree, [broken])
    log = Path(str(failed.value).rsplit(" ", 1)[-1])
    assert log.is_file() and "error: broken" in log.read_text()
    assert not list((store().root / "entries").glob("*"))


def test_too_little_disk_is_refused_before_anything(tree, monkeypatch, capsys):
    monkeypatch.setattr(diskspace.shutil, "disk_usage", lambda p: type("U", (), {"free": 2**20})())
    with pytest.raises(DiskFull, match="this kernel build needs up to .* MiB, 1 MiB free"):
        build(tree)
    assert main(["kernels", "build", f"src:{tree}", "--name", "full"]) == 3
    assert "harness failure" in capsys.readouterr().err
    assert not (store().root / "work").exists() and not (store().root / "entries").exists()


def test_the_command_ends_with_the_spec(tree, tmp_path, capsys):
    assert main(["kernels", "build", f"src:{tree}", "--name", "cli"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "build:cli"
    assert main(["kernels", "build", f"src:{tree}", "--patch", str(tmp_path / "none.patch")]) == 2
    assert "--patch" in capsys.readouterr().err
    assert main(["kernels", "build", "src:"]) == 2


def test_the_builds_are_listed_with_their_source_and_patches(tree, tmp_path, capsys):
    from plugpull.cli.kernels import print_built
    from plugpull.kernels import Kernels
    patch = a_patch(tmp_path / "fix-it.patch", "int line3;", "int line3 = 1;")
    build(tree, [patch], name="fixed")
    print_built(Kernels())
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("build:fixed"))
    assert f"src:{tree}" in row and "fix-it.patch" in row


def test_an_interrupted_make_leaves_no_process(tmp_path, monkeypatch):
    """Stopped at its first line (as by Ctrl-C or a SIGTERM), make and its recipe are killed,
    not waited for: the recipe never gets to its last command."""
    from plugpull.kernels.build import make as makemod
    (tmp_path / "Makefile").write_text("slow:\n\t@echo started; sleep 30; touch finished\n")

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(makemod.Lines, "advance", interrupted)
    with pytest.raises(KeyboardInterrupt):
        makemod.Make(tmp_path, tmp_path / "out", tmp_path / "log").run("slow")
    assert not (tmp_path / "finished").exists()
    assert subprocess.run(["pgrep", "-f", f"make -C {tmp_path}"], capture_output=True).returncode == 1


def test_an_option_the_tree_does_not_declare_is_refused_and_nothing_cached(tree, tmp_path, capsys):
    mine = tmp_path / "mine.config"
    mine.write_text("CONFIG_ADDED_IN_A_LATER_KERNEL=y\n")
    with pytest.raises(UsageError, match="does not declare what was asked: CONFIG_ADDED_IN_A_LATER_KERNEL"):
        build(tree, name="older", config=mine)
    assert calls() == []  # refused before make ran at all
    assert main(["kernels", "build", f"src:{tree}", "--config", str(mine)]) == 2
    assert "CONFIG_ADDED_IN_A_LATER_KERNEL" in capsys.readouterr().err
    assert not (store().root / "entries").exists() and not list((store().root / "logs").iterdir())


def test_an_option_marked_for_other_versions_is_not_asked_of_this_one(tree, tmp_path):
    mine = tmp_path / "mine.config"
    mine.write_text("CONFIG_ADDED_IN_A_LATER_KERNEL=y  # in 1.1+\n# CONFIG_GONE is not set  # in -0.9\n")
    assert build(tree, name="older", config=mine).built.release.startswith("1.0.0-")
    mine.write_text("CONFIG_ADDED_IN_A_LATER_KERNEL=y  # in 0.9-1.0\n")
    with pytest.raises(UsageError, match="does not declare what was asked: CONFIG_ADDED_IN_A_LATER_KERNEL"):
        build(tree, name="asked", config=mine)


def test_a_tree_built_beside_gets_its_objects_in_out_next_to_it_and_a_users_tree_never(tree, tmp_path):
    """A bisect's clone (`CACHE/bisect/NAME/src`) asks for its objects beside it, in `NAME/out`,
    the layout of a Debian work copy, so ccache names its sources `../src` as it names theirs;
    `kernels build src:DIR` never asks, whatever the tree's name."""
    import shutil
    clone = tmp_path / "bisect" / "linux-0123" / "src"
    shutil.copytree(tree, clone)
    result = build(clone, name="step", beside=True)
    assert (clone.parent / "out" / "calls").is_file() and result.spec == "build:step"
    assert not list((store().root / "work").glob("*/out"))
    users = tmp_path / "elsewhere" / "src"
    shutil.copytree(tree, users)
    build(users, name="users")
    assert not (users.parent / "out").exists() and len(list((store().root / "work").glob("*/out/calls"))) == 1


