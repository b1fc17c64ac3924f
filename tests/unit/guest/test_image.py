"""The image builder on a tiny recipe (busybox only) and a fake kernel: no VM, a few ms."""

import multiprocessing
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from plugpull.guest.image.cpio import CpioWriter
from plugpull.errors import ImageError, ToolMissing
from plugpull.guest.image import build as image_mod
from plugpull.guest.image.build import KernelSource, Recipe, build_image, cache_key, plan_image

RECIPE = """
[kernel]
modules = ["xfs"]
[programs]
busybox = "busybox-static"
[files]
"/init" = "init"
"""


@pytest.fixture
def kernel(tmp_path) -> KernelSource:
    mods = tmp_path / "modules" / "6.1.0-fake"
    (mods / "kernel/fs/xfs").mkdir(parents=True)
    (mods / "kernel/lib").mkdir(parents=True)
    (mods / "kernel/fs/xfs/xfs.ko").write_bytes(b"xfs module")
    (mods / "kernel/lib/libcrc32c.ko").write_bytes(b"crc module")
    (mods / "kernel/lib/unused.ko").write_bytes(b"unused")
    (mods / "modules.dep").write_text(
        "kernel/fs/xfs/xfs.ko: kernel/lib/libcrc32c.ko\nkernel/lib/libcrc32c.ko:\nkernel/lib/unused.ko:\n")
    (mods / "modules.builtin").write_text("kernel/drivers/virtio/virtio.ko\n")
    vmlinuz = tmp_path / "vmlinuz"
    vmlinuz.write_bytes(b"kernel image")
    return KernelSource(vmlinuz, mods)


def recipe(text=RECIPE) -> Recipe:
    return Recipe.parse(text)


def test_missing_program_names_its_package(kernel):
    r = recipe(RECIPE.replace('busybox = "busybox-static"', 'nosuchprog = "nosuch-package"'))
    with pytest.raises(ToolMissing, match="nosuch-package"):
        plan_image(r, kernel)


def test_cache_key_is_stable_and_follows_inputs(kernel):
    r = recipe()
    key = cache_key(r, kernel, plan_image(r, kernel))
    assert key == cache_key(r, kernel, plan_image(r, kernel))
    r2 = recipe(RECIPE + "\n# changed\n")
    assert cache_key(r2, kernel, plan_image(r2, kernel)) != key
    (kernel.modules_dir / "kernel/fs/xfs/xfs.ko").write_bytes(b"a rebuilt xfs module")
    assert cache_key(r, kernel, plan_image(r, kernel)) != key
    os.utime(kernel.kernel, ns=(0, 123))
    assert cache_key(r, kernel, plan_image(r, kernel)) != key


def test_build_is_cached_and_rebuilt_on_change(kernel, tmp_path):
    root = tmp_path / "cache"
    first = build_image(kernel, recipe(), root)
    built_at = first.initramfs.stat().st_mtime_ns
    again = build_image(kernel, recipe(), root)
    assert again.key == first.key and again.initramfs.stat().st_mtime_ns == built_at
    changed = build_image(kernel, recipe(RECIPE + "\n# changed\n"), root)
    assert changed.key != first.key and changed.initramfs.is_file()
    assert first.manifest["kernel_release"] == "6.1.0-fake"


def test_initramfs_lists_what_the_plan_holds(kernel, tmp_path):
    image = build_image(kernel, recipe(), tmp_path / "cache")
    listing = subprocess.run(["cpio", "-t"], stdin=open(image.initramfs, "rb"),
                             capture_output=True, text=True, check=True).stdout.split()
    assert "init" in listing
    assert "usr/bin/busybox" in listing and "usr/bin/sh" in listing
    assert "usr/lib/modules/6.1.0-fake/kernel/fs/xfs/xfs.ko" in listing
    assert "usr/lib/modules/6.1.0-fake/kernel/lib/libcrc32c.ko" in listing
    assert "usr/lib/modules/6.1.0-fake/kernel/lib/unused.ko" not in listing


def test_cpio_is_deterministic_and_extractable(tmp_path):
    def write(path):
        with open(path, "wb") as f:
            w = CpioWriter(f)
            w.directory("etc")
            w.file("etc/hello", b"hello\n", 0o600)
            w.symlink("etc/link", "hello")
            w.close()
    write(tmp_path / "a.cpio")
    write(tmp_path / "b.cpio")
    assert (tmp_path / "a.cpio").read_bytes() == (tmp_path / "b.cpio").read_bytes()
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet"], cwd=out, stdin=open(tmp_path / "a.cpio", "rb"), check=True)
    assert (out / "etc/hello").read_bytes() == b"hello\n"
    assert os.readlink(out / "etc/link") == "hello"
    assert (out / "etc/hello").stat().st_mode & 0o777 == 0o600


def _build_in_child(kernel, text, root, hold=None):
    """Build in a forked process, which exits (and so stops using the image) unless `hold`,
    an Event, keeps it alive."""
    def child():
        build_image(kernel, recipe(text), root)
        if hold is not None:
            hold.wait(60)
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=child)
    proc.start()
    if hold is None:
        proc.join(60)
        assert proc.exitcode == 0
    return proc


def test_old_images_are_pruned_but_never_one_in_use(kernel, tmp_path):
    root = tmp_path / "cache"
    variants = [RECIPE + f"\n# variant {i}\n" for i in range(6)]
    hold = multiprocessing.get_context("fork").Event()
    holder = _build_in_child(kernel, variants[0], root, hold)
    try:
        deadline = time.monotonic() + 60
        while not list(root.glob("*/in-use")) and time.monotonic() < deadline:
            time.sleep(0.1)
        held = next(root.glob("*/in-use")).parent.name
        for text in variants[1:]:
            _build_in_child(kernel, text, root)
        left = {p.name for p in root.iterdir() if (p / "manifest.json").is_file()}
        assert held in left, "an image a live process uses was pruned"
        assert len(left) == 4, left  # the 3 most recently used, and the one in use
    finally:
        hold.set()
        holder.join(60)
    _build_in_child(kernel, RECIPE + "\n# variant 7\n", root)
    left = {p.name for p in root.iterdir() if (p / "manifest.json").is_file()}
    assert held not in left and len(left) == 3


HELLO = '#include <stdio.h>\nint main(void) { puts("hello %s"); return 0; }\n'


def with_build(source: Path) -> Recipe:
    return recipe(RECIPE + f'[build]\n"/usr/bin/pp-hello" = "{source}"\n')


def extract(initramfs: Path, into: Path) -> Path:
    into.mkdir()
    with open(initramfs, "rb") as f:
        subprocess.run(["cpio", "-id", "--quiet"], cwd=into, stdin=f, check=True)
    return into


def test_build_compiles_a_static_program_and_an_edit_rebuilds(kernel, tmp_path):
    source = tmp_path / "hello.c"
    source.write_text(HELLO % "v1")
    first = build_image(kernel, with_build(source), tmp_path / "cache")
    binary = extract(first.initramfs, tmp_path / "x1") / "usr/bin/pp-hello"
    assert subprocess.run([binary], capture_output=True, text=True).stdout == "hello v1\n"
    headers = subprocess.run(["readelf", "-l", binary], capture_output=True, text=True, check=True).stdout
    assert "LOAD" in headers and "INTERP" not in headers
    assert first.manifest["built"] == {"/usr/bin/pp-hello": str(source)}

    source.write_text(HELLO % "v2")
    second = build_image(kernel, with_build(source), tmp_path / "cache")
    assert second.key != first.key
    binary = extract(second.initramfs, tmp_path / "x2") / "usr/bin/pp-hello"
    assert subprocess.run([binary], capture_output=True, text=True).stdout == "hello v2\n"


def test_build_error_shows_the_compiler_output_and_caches_nothing(kernel, tmp_path):
    source = tmp_path / "broken.c"
    source.write_text("int main(void) { return no_such_name; }\n")
    with pytest.raises(ImageError, match="(?s)broken.c.*no_such_name"):
        build_image(kernel, with_build(source), tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*/manifest.json"))


def test_missing_compiler_names_its_packages(kernel, tmp_path, monkeypatch):
    source = tmp_path / "hello.c"
    source.write_text(HELLO % "v1")
    monkeypatch.setattr(image_mod, "COMPILER", "pp-no-such-cc")
    with pytest.raises(ToolMissing, match="gcc libc6-dev"):
        build_image(kernel, with_build(source), tmp_path / "cache")


def test_missing_build_source_is_an_image_error(kernel, tmp_path):
    with pytest.raises(ImageError, match="nothere.c"):
        plan_image(with_build(tmp_path / "nothere.c"), kernel)


def test_own_kernel_builds_its_own_image(tmp_path):
    """A kernel under development: its bzImage and modules tree, wherever they are."""
    from plugpull.guest.image.build import host_kernel

    host = host_kernel()
    own = tmp_path / "bzImage"
    own.write_bytes(host.kernel.read_bytes())
    mine = build_image(KernelSource(own, host.modules_dir), root=tmp_path / "cache")
    theirs_key = cache_key(Recipe.load(), host, plan_image(Recipe.load(), host))
    assert mine.key != theirs_key, "the kernel's identity must be part of the key"
    assert mine.kernel_release == host.release and mine.manifest["kernel"] == str(own)
    assert mine.manifest["boot"] in ("pvh", "bzimage") and mine.kernel.stat().st_size > 0


KEY_OF_CHECKOUT = """
from plugpull.guest.image.build import Recipe, cache_key, host_kernel, plan_image
k = host_kernel()
print(cache_key(Recipe.load(), k, plan_image(Recipe.load(), k)))
"""


def _key_in(checkout: Path) -> str:
    out = subprocess.run(["python3", "-c", KEY_OF_CHECKOUT], cwd=checkout, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(checkout)})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_same_sources_give_the_same_key_in_any_checkout(tmp_path):
    """The repo's own files are keyed by content: another path and newer mtimes change nothing,
    a changed byte in a guest script does."""
    try:
        image_mod.host_kernel()
    except ToolMissing:
        pytest.skip("no host kernel to key")
    repo = Path(__file__).resolve().parents[3]
    copies = []
    for name in ("a", "b"):
        dest = tmp_path / name
        for tree in ("plugpull", "images"):
            shutil.copytree(repo / tree, dest / tree, ignore=shutil.ignore_patterns("__pycache__"))
        copies.append(dest)
    agent = copies[1] / "images" / "agent.sh"
    os.utime(agent, ns=(0, 123))
    assert _key_in(copies[0]) == _key_in(copies[1])
    agent.write_text(agent.read_text() + "\n# changed\n")
    assert _key_in(copies[0]) != _key_in(copies[1])
