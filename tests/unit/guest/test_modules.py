"""The module rule on synthetic modules trees: required, optional, built in; the recipe's own
lists (its modules, its programs' packages in `make deps`). No VM."""

import subprocess
from pathlib import Path

import pytest

from plugpull.errors import ImageError, KernelUnfit, UsageError
from plugpull.guest.image.build import KernelSource, Recipe, build_image, cache_key, plan_image
from plugpull.guest.image.modules import module_name, select_modules
from plugpull.paths import IMAGES_DIR, ROOT


def modules_tree(root: Path, release: str, modules: dict, builtin=()) -> Path:
    """A lib/modules/RELEASE tree: `modules` maps a path to the paths it depends on."""
    tree = root / release
    for path in modules:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(f"module {path}".encode())
    (tree / "modules.dep").write_text("".join(f"{p}: {' '.join(d)}\n".replace(": \n", ":\n")
                                              for p, d in modules.items()))
    (tree / "modules.builtin").write_text("".join(f"{p}\n" for p in builtin))
    return tree


OLD = {  # a 6.x-like kernel: crc32c and xxhash as modules, virtio_pci a module
    "kernel/fs/xfs/xfs.ko.xz": ["kernel/lib/libcrc32c.ko.xz"],
    "kernel/lib/libcrc32c.ko.xz": [],
    "kernel/crypto/crc32c_generic.ko.xz": [],
    "kernel/crypto/xxhash_generic.ko.xz": [],
    "kernel/drivers/virtio/virtio_pci.ko.xz": [],
}
NEW = {  # a 7.x-like kernel: no crc32c_generic, no xxhash_generic; virtio_pci built in
    "kernel/fs/xfs/xfs.ko.xz": [],
}
NEW_BUILTIN = ("kernel/drivers/virtio/virtio_pci.ko", "kernel/crypto/ecb.ko")


def test_module_names_read_as_the_kernel_does():
    assert module_name("kernel/fs/xfs/xfs.ko.xz") == "xfs"
    assert module_name("kernel/drivers/md/dm-log-writes.ko") == "dm_log_writes"


def test_required_and_optional_present_follow_their_dependencies(tmp_path):
    tree = modules_tree(tmp_path, "6.1.0-fake", OLD)
    got = select_modules(tree, ["xfs", "virtio_pci"], ["crc32c_generic", "xxhash_generic"])
    assert got.paths == ("kernel/lib/libcrc32c.ko.xz", "kernel/fs/xfs/xfs.ko.xz",
                         "kernel/drivers/virtio/virtio_pci.ko.xz", "kernel/crypto/crc32c_generic.ko.xz",
                         "kernel/crypto/xxhash_generic.ko.xz")
    assert got.skipped == () and got.builtin == ()


def test_built_in_counts_as_present_and_optional_absent_is_skipped(tmp_path):
    tree = modules_tree(tmp_path, "7.3.4-fake", NEW, NEW_BUILTIN)
    got = select_modules(tree, ["xfs", "virtio_pci"], ["crc32c_generic", "xxhash_generic", "ecb"])
    assert got.paths == ("kernel/fs/xfs/xfs.ko.xz",)
    assert got.builtin == ("virtio_pci", "ecb")
    assert got.skipped == ("crc32c_generic", "xxhash_generic")


def test_a_required_module_missing_is_refused_naming_all_of_them(tmp_path):
    tree = modules_tree(tmp_path, "7.3.4-fake", NEW, NEW_BUILTIN)
    with pytest.raises(KernelUnfit, match=r"7\.3\.4-fake lacks the required module\(s\) btrfs, dm_mod:") as e:
        select_modules(tree, ["xfs", "btrfs", "dm_mod"], ["crc32c_generic"])
    assert isinstance(e.value, UsageError)  # exit code 2: the kernel chosen, not the harness


def test_an_optional_name_is_not_required_by_the_builtin_list_of_another(tmp_path):
    tree = modules_tree(tmp_path, "6.1.0-fake", OLD)  # ecb neither a module nor built in here
    with pytest.raises(KernelUnfit, match="ecb"):
        select_modules(tree, ["xfs", "ecb"], [])
    assert select_modules(tree, ["xfs"], ["ecb"]).skipped == ("ecb",)


def test_a_name_both_required_and_optional_is_a_recipe_error(tmp_path):
    tree = modules_tree(tmp_path, "6.1.0-fake", OLD)
    with pytest.raises(ImageError, match="xfs as both required and optional"):
        select_modules(tree, ["xfs"], ["xfs"])


def test_the_recipe_classifies_the_crypto_helpers_as_optional():
    recipe = Recipe.load()
    assert {"crc32c_generic", "crc32c_intel", "xxhash_generic", "blake2b_generic", "ecb"} <= set(recipe.optional)
    assert {"xfs", "ext4", "btrfs", "ahci", "ata_piix", "virtio_pci", "virtio_console", "dm_mod"} <= set(recipe.modules)
    assert not set(recipe.modules) & set(recipe.optional)


RECIPE = """
[kernel]
modules = ["xfs", "virtio_pci"]
optional = ["crc32c_generic", "xxhash_generic", "ecb"]
[programs]
busybox = "busybox-static"
[files]
"/init" = "init"
"""


def fake_kernel(root: Path, release: str, modules: dict, builtin=()) -> KernelSource:
    tree = modules_tree(root / "modules", release, modules, builtin)
    vmlinuz = root / f"vmlinuz-{release}"
    vmlinuz.write_bytes(b"kernel image " + release.encode())
    return KernelSource(vmlinuz, tree)


def test_image_of_a_new_kernel_skips_optional_and_keeps_its_builtin_list(tmp_path):
    kernel = fake_kernel(tmp_path, "7.3.4-fake", NEW, NEW_BUILTIN)
    image = build_image(kernel, Recipe.parse(RECIPE), tmp_path / "cache")
    assert image.manifest["modules_skipped"] == ["crc32c_generic", "xxhash_generic"]
    listing = subprocess.run(["cpio", "-t"], stdin=open(image.initramfs, "rb"), capture_output=True,
                             text=True, check=True).stdout.split()
    assert "usr/lib/modules/7.3.4-fake/modules.builtin" in listing
    assert "usr/lib/modules/7.3.4-fake/kernel/fs/xfs/xfs.ko.xz" in listing


def test_the_image_key_follows_the_kernel(tmp_path):
    recipe = Recipe.parse(RECIPE)
    old = fake_kernel(tmp_path / "a", "6.12.117-fake", OLD)
    new = fake_kernel(tmp_path / "b", "7.3.4-fake", NEW, NEW_BUILTIN)
    keys = {cache_key(recipe, k, plan_image(recipe, k)) for k in (old, new)}
    assert len(keys) == 2
    same = fake_kernel(tmp_path / "c", "6.12.117-fake", OLD)  # the same files elsewhere: another kernel
    assert cache_key(recipe, same, plan_image(recipe, same)) not in keys


def test_the_guest_init_skips_built_in_drivers():
    init = (IMAGES_DIR / "init").read_text()
    assert "modules.builtin" in init and 'grep -q "/$m\\.ko"' in init


def makefile_packages(text: str) -> set[str]:
    """The Makefile's DEB_PACKAGES, its continuation lines joined."""
    joined = text.replace("\\\n", " ")
    line = next(line for line in joined.splitlines() if line.startswith("DEB_PACKAGES"))
    return set(line.split(":=", 1)[1].split())


def test_make_deps_installs_every_package_the_recipe_copies_from():
    """`make deps` installs what the image is built from: a program added to the recipe without
    its package in the Makefile builds on this host and fails on a fresh one."""
    packages = makefile_packages((ROOT / "Makefile").read_text())
    recipe = Recipe.load()
    assert {"setfattr", "getfattr"} <= set(recipe.programs)  # a reproducer's xattr checks need them
    assert set(recipe.programs.values()) - packages == set()
    assert makefile_packages("DEB_PACKAGES := a b \\\n\tc\nOTHER := d\n") == {"a", "b", "c"}
