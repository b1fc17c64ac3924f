"""A fake apt for plugpull.kernels: synthetic .debs of both shapes (one linux-image package;
7.x's binary, modules and base), served as apt-cache and apt-get download would."""

import lzma
import shutil
import subprocess
from pathlib import Path

from plugpull.kernels.apt import Archive, ArchiveUnreachable
from plugpull.kernels.store import sha256_of

OLD, NEW = "6.12.117+deb13-amd64", "7.3.4+deb13-amd64"
OLD_VERSION, NEW_VERSION = "6.12.117-1", "7.3.4-1~bpo13+1"
PACKAGES = {  # name -> (version, suite, {path in the package: content})
    f"linux-image-{OLD}-unsigned": (OLD_VERSION, "trixie", {
        f"boot/vmlinuz-{OLD}": b"old kernel",
        f"usr/lib/modules/{OLD}/kernel/fs/xfs/xfs.ko.xz": lzma.compress(b"xfs"),
        f"usr/lib/modules/{OLD}/modules.builtin": b"kernel/drivers/virtio/virtio.ko\n"}),
    f"linux-binary-unsigned-{NEW}": (NEW_VERSION, "trixie-backports", {
        f"usr/lib/modules/{NEW}/vmlinuz.unsigned": b"new kernel"}),
    f"linux-modules-{NEW}": (NEW_VERSION, "trixie-backports", {
        f"usr/lib/modules/{NEW}/kernel/fs/xfs/xfs.ko.xz": lzma.compress(b"xfs")}),
    f"linux-base-{NEW}": (NEW_VERSION, "trixie-backports", {
        f"usr/lib/modules/{NEW}/modules.builtin": b"kernel/drivers/virtio/virtio_pci.ko\n",
        f"usr/lib/modules/{NEW}/modules.order": b"kernel/fs/xfs/xfs.ko\n"}),
}


def build_deb(folder: Path, name: str, version: str, files: dict) -> Path:
    root = folder / name
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(f"Package: {name}\nVersion: {version}\nArchitecture: amd64\n"
                                             f"Maintainer: plugpull tests <tests@example.org>\nDescription: test\n")
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    deb = folder / f"{name}_{version}_amd64.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "-b", str(root), str(deb)], check=True,
                   capture_output=True)
    shutil.rmtree(root)
    return deb


def build_debs(folder: Path) -> dict:
    """name -> .deb, every package above built in `folder`."""
    return {name: build_deb(folder, name, version, files) for name, (version, _, files) in PACKAGES.items()}


class FakeApt:
    """apt's answers for the packages above; counts updates and downloads."""

    def __init__(self, root: Path, debs: dict, reachable=True, age=None):
        self.root, self.debs, self.reachable, self.age = root, debs, reachable, age
        self.archive = Archive("http://archive.example/debian")
        self.updates = self.downloads = 0
        self.corrupt = False

    def index_age(self):
        return self.age

    def update(self):
        self.updates += 1
        if not self.reachable:
            raise ArchiveUnreachable("Debian's archive at http://archive.example/debian cannot be reached")
        self.age = 0.0

    def run(self, tool, *args, cwd=None, timeout=None):
        out = ""
        if args[0] == "pkgnames":
            out = "\n".join([*PACKAGES, "linux-image-amd64"])
        elif args[0] == "madison":
            out = "".join(f"{n} | {PACKAGES[n][0]} | {self.archive.uri} {PACKAGES[n][1]}/main amd64 Packages\n"
                          for n in args[1:] if n in PACKAGES)
        elif args[0] == "show":
            out = "\n".join(self._stanza(a.split("=")[0]) for a in args[2:])
        elif args[1] == "download":
            if not self.reachable:
                return subprocess.CompletedProcess(args, 100, "", "E: Failed to fetch: unreachable")
            self.downloads += 1
            for a in args[2:]:
                shutil.copy(self.debs[a.split("=")[0]], cwd)
                if self.corrupt:
                    with open(Path(cwd) / self.debs[a.split("=")[0]].name, "ab") as f:
                        f.write(b"x")
        return subprocess.CompletedProcess(args, 0, out, "")

    def _stanza(self, name):
        deb = self.debs[name]
        return (f"Package: {name}\nVersion: {PACKAGES[name][0]}\nFilename: pool/main/l/{deb.name}\n"
                f"Size: {deb.stat().st_size}\nSHA256: {sha256_of(deb)}\nDescription: test\n multi-line\n")
