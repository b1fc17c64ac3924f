"""A guest root in which real fstests runs the exported tests: a Debian 12 root with what
fstests' `make` and the exports need, the fstests tree copied in with suites/reproducers/'s
tests in it, built inside the root (so its programs match the root's libraries), written as
an ext4 image file.

    python -m plugpull.reproducer.fstests_root FSTESTS_DIR    # prints the image's path

The image is cached in the cache's `fstests-roots/KEY/root.img`, KEY a digest of the fstests
tree's files, the exports' files and the package list, so a second run with the same three
only looks it up. Needs root (a chroot), mmdebstrap and mke2fs; the archive is the host's
(plugpull/kernels/sources.py), as for kernels.

The exports are numbered anew in the tree (EXPORTS): suites/reproducers/ numbers each
filesystem's from 900, and in tests/generic/ they share one directory. The golden output's
first line names the test, so it is renumbered with it."""

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from plugpull.errors import ImageError, InfraError, PlugpullError, ToolMissing, UsageError
from plugpull.files import atomic_path
from plugpull.kernels.sources import host_archive
from plugpull.paths import cache_dir, make_tempdir
from plugpull.locks import shared
from plugpull.prune import Kind, mark_used, register
from plugpull.reproducer.findings import tree_numbers
from plugpull.reproducer.suite import DIR as SUITE

SUITE_NAME = "bookworm"
FSTESTS_IN_ROOT = "/opt/fstests"
# What fstests' README asks of a Debian host to build it, the filesystems' tools, and what
# the exports and `check` call.
PACKAGES = (
    "acl", "attr", "automake", "autoconf", "bc", "bsdextrautils", "btrfs-progs", "dmsetup", "e2fsprogs",
    "f2fs-tools", "file", "fio", "gawk", "gcc", "kmod", "libacl1-dev", "libaio-dev", "libattr1-dev",
    "libcap-dev", "libgdbm-compat-dev", "libgdbm-dev", "libtool", "libtool-bin", "liburing-dev",
    "libuuid1", "make", "pkgconf", "procps", "psmisc", "python3", "sed", "util-linux", "uuid-dev", "uuid-runtime",
    "xfslibs-dev", "xfsprogs",
)
EXPORTS = tree_numbers()  # suites/reproducers/fstests/FS/NNN -> the tree's tests/DIR/NNN, from findings.LIVE
IMAGE_SLACK_MIB = 512  # free space in the root for fstests' results and temp files
BUILD_TIMEOUT = 3600.0
ROOTS, LOCK = "fstests-roots", ".lock"  # the cache's folder of roots; a root's lock (plugpull.prune)


def tree_digest(tree: Path) -> str:
    """A digest of every file of the fstests tree but its .git (names, modes and contents)."""
    h = hashlib.sha256()
    for path in sorted(p for p in tree.rglob("*") if ".git" not in p.relative_to(tree).parts):
        if path.is_symlink():
            h.update(f"L {path.relative_to(tree)} {os.readlink(path)}\n".encode())
        elif path.is_file():
            h.update(f"F {path.relative_to(tree)} {path.stat().st_mode & 0o111}\n".encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def exports(suite: Path = SUITE) -> dict[str, tuple[str, str]]:
    """Each export as the tree gets it: tests/DIR/NNN -> (test text, golden text), both
    renumbered."""
    out = {}
    for source, dest in EXPORTS.items():
        old, new = Path(source).name, Path(dest).name
        test = (suite / "fstests" / source).read_text()
        golden = (suite / "fstests" / f"{source}.out").read_text()
        test = test.replace(f"# FS QA Test No. {old}\n", f"# FS QA Test No. {new}\n", 1)
        first, _, rest = golden.partition("\n")
        if first != f"QA output created by {old}":
            raise InfraError(f"{source}.out: its first line is {first!r}, not the test's name")
        out[f"tests/{dest}"] = (test, f"QA output created by {new}\n{rest}")
    return out


def root_key(tree: Path, suite: Path = SUITE) -> str:
    h = hashlib.sha256(f"fstests-root 1 {SUITE_NAME} {' '.join(PACKAGES)}\n".encode())
    h.update(tree_digest(tree).encode())
    for name, (test, golden) in sorted(exports(suite).items()):
        h.update(f"{name}\n{test}\n{golden}\n".encode())
    return h.hexdigest()[:20]


def check_tree(tree: Path) -> Path:
    tree = Path(tree).expanduser()
    if not (tree / "check").is_file() or not (tree / "common" / "dmflakey").is_file():
        raise UsageError(f"{tree}: not an fstests tree (no check, no common/dmflakey)")
    return tree.resolve()


def _run(argv: list[str], what: str, log: Path, timeout: float = BUILD_TIMEOUT) -> None:
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        try:
            done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ImageError(f"{what}: no end after {timeout:.0f} s (log: {log})") from None
    if done.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-5:]
        raise ImageError(f"{what} failed (exit {done.returncode}, log: {log}): {' | '.join(tail)}")


def debootstrap(root: Path, log: Path) -> None:
    """A Debian 12 root with PACKAGES, from the host's archive."""
    archive = host_archive()
    argv = ["mmdebstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
            f"--keyring={archive.keyring}", "--aptopt=Apt::Install-Recommends \"false\""]
    argv += [f"--aptopt={key} \"{value}\"" for key, value in archive.carried]
    _run([*argv, SUITE_NAME, str(root), f"deb {archive.uri} {SUITE_NAME} main"], "mmdebstrap", log)


def place_fstests(tree: Path, root: Path, suite: Path = SUITE) -> None:
    """The tree copied into the root without its .git, the exports in it."""
    where = root / FSTESTS_IN_ROOT.lstrip("/")
    shutil.copytree(tree, where, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    for name, (test, golden) in exports(suite).items():
        (where / name).write_text(test)
        os.chmod(where / name, 0o755)
        (where / f"{name}.out").write_text(golden)


def build_inside(root: Path, log: Path) -> None:
    """fstests' `make` in the root, chrooted with /proc and /dev, in a mount namespace of its
    own (the mounts go with it). The whole tree's make writes every group list, the exports'
    too."""
    steps = (f"mount -t proc proc {root}/proc && mount --rbind /dev {root}/dev && "
             f"chroot {root} /bin/sh -c 'cd {FSTESTS_IN_ROOT} && make -j{os.cpu_count() or 1}'")
    _run(["unshare", "--mount", "--propagation", "private", "sh", "-c", steps], "fstests' make in the root", log)
    for name in EXPORTS.values():
        group = root / FSTESTS_IN_ROOT.lstrip("/") / "tests" / Path(name).parent / "group.list"
        if f"{Path(name).name} " not in group.read_text() and f"{Path(name).name}\n" not in group.read_text():
            raise ImageError(f"fstests' make left {name} out of {group.name}")


def du_mib(root: Path) -> int:
    out = subprocess.run(["du", "-sxm", str(root)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def write_image(root: Path, image: Path, log: Path) -> None:
    mib = du_mib(root) * 5 // 4 + IMAGE_SLACK_MIB
    _run(["mke2fs", "-q", "-F", "-t", "ext4", "-d", str(root), "-L", "fstests-root", str(image), f"{mib}M"],
         "mke2fs of the root", log)


def tools_missing() -> list[str]:
    return [t for t in ("mmdebstrap", "mke2fs", "unshare", "chroot") if shutil.which(t) is None]


def fstests_root(tree: Path, suite: Path = SUITE, say=print) -> Path:
    """The root image for `tree` with the exports of `suite`: the cached one, or a new one
    (minutes: mmdebstrap, then fstests' make under the root)."""
    tree = check_tree(tree)
    image = cache_dir() / ROOTS / root_key(tree, suite) / "root.img"
    if image.is_file():
        mark_used(image.parent)
        return image
    if os.geteuid() != 0:
        raise UsageError("building an fstests root needs root (mmdebstrap, chroot)")
    if missing := tools_missing():
        raise ToolMissing(", ".join(missing), "apt-get install mmdebstrap e2fsprogs util-linux")
    image.parent.mkdir(parents=True, exist_ok=True)
    work = make_tempdir("fstests-root")
    log = image.parent / "build.log"
    log.write_text("")
    try:
        say(f"fstests root: mmdebstrap ({len(PACKAGES)} packages), log {log}")
        debootstrap(work / "root", log)
        place_fstests(tree, work / "root", suite)
        say("fstests root: fstests' make in the root")
        build_inside(work / "root", log)
        with atomic_path(image) as tmp:
            write_image(work / "root", tmp, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return image


def holding(image: Path):
    """`image` kept from `plugpull kernels prune` while a guest runs on it: its cache entry's
    lock held shared (an image outside the cache is not locked)."""
    entry = image.parent
    cached = entry.parent.resolve() == (cache_dir() / ROOTS).resolve()
    return shared(entry / LOCK) if cached else contextlib.nullcontext()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m plugpull.reproducer.fstests_root FSTESTS_DIR", file=sys.stderr)
        return 2
    try:
        print(fstests_root(Path(argv[0]), say=lambda line: print(line, file=sys.stderr)))
    except UsageError as e:
        print(f"fstests root: {e}", file=sys.stderr)
        return 2
    except PlugpullError as e:
        print(f"fstests root: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


register(Kind(ROOTS, entry_lock=LOCK, candidate=lambda entry: (entry / "root.img").is_file()))
