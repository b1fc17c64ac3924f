"""The guest image: a kernel and an initramfs built from the host's Debian packages.

Built images are cached under `cache_dir()/images/<key>`, where the key hashes every input:
the recipe, the guest scripts, the sources of the programs compiled for the guest, and the
identity (path, size, mtime) of the kernel and of each file copied in. A changed package or
recipe gives a new key; an unchanged one is reused.
"""

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from plugpull.guest.image.cpio import CpioWriter
from plugpull.errors import ImageError, ToolMissing
from plugpull.guest.image.kernel import pvh_kernel
from plugpull.files import atomic_path
from plugpull.guest.image.cache import hold, prune_cache
from plugpull.guest.image.modules import ModuleIndex, module_name, select_modules
from plugpull.paths import IMAGES_DIR, cache_dir
from plugpull.diskspace import space_is_fatal
from plugpull.locks import exclusive

log = logging.getLogger(__name__)

BUILDER_VERSION = "2"
KEEP_IMAGES = 3
SEARCH_PATH = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
USRMERGE_LINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
COMPILER = "cc"
COMPILE_FLAGS = ("-static", "-O2", "-Wall")


@dataclass(frozen=True)
class KernelSource:
    """A kernel image and the modules tree built with it (`.../lib/modules/<release>`)."""

    kernel: Path
    modules_dir: Path

    @property
    def release(self) -> str:
        return self.modules_dir.name


@dataclass(frozen=True)
class Recipe:
    modules: tuple[str, ...]  # required: a kernel without one cannot run the guest
    programs: dict
    aliases: dict
    files: dict
    text: str
    build: dict = field(default_factory=dict)
    optional: tuple[str, ...] = ()  # skipped, with a note, by a kernel that has them neither way

    @classmethod
    def load(cls, path: Path = IMAGES_DIR / "guest.toml") -> "Recipe":
        return cls.parse(path.read_text())

    @classmethod
    def parse(cls, text: str) -> "Recipe":
        data = tomllib.loads(text)
        kernel = data.get("kernel", {})
        return cls(
            modules=tuple(kernel.get("modules", ())),
            programs=dict(data.get("programs", {})),
            aliases=dict(data.get("aliases", {})),
            files=dict(data.get("files", {})),
            text=text,
            build=dict(data.get("build", {})),
            optional=tuple(kernel.get("optional", ())),
        )


@dataclass(frozen=True)
class GuestImage:
    key: str
    kernel: Path
    initramfs: Path
    kernel_release: str
    manifest: dict = field(default_factory=dict, compare=False)
    fresh: bool = field(default=False, compare=False)  # built by this call, no guest booted from it yet


def host_kernel() -> KernelSource:
    """The newest Debian kernel installed on the host that has its modules."""
    candidates = []
    for vmlinuz in Path("/boot").glob("vmlinuz-*"):
        release = vmlinuz.name[len("vmlinuz-"):]
        modules = Path("/lib/modules") / release
        if (modules / "modules.dep").is_file():
            candidates.append((_release_sort_key(release), KernelSource(vmlinuz, modules)))
    if not candidates:
        raise ToolMissing("guest kernel", "install the Debian package linux-image-amd64 (make deps)")
    return max(candidates, key=lambda c: c[0])[1]


def _release_sort_key(release: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"[.-]", release)]


def which(program: str) -> Path | None:
    for d in SEARCH_PATH:
        p = Path(d) / program
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def shared_libraries(binary: Path) -> list[Path]:
    """The libraries the dynamic loader maps for `binary` (empty for a static one)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    libs = []
    for line in out.stdout.splitlines():
        m = re.match(r"\s*(?:\S+ => )?(/\S+) \(0x", line)
        if m:
            libs.append(Path(m.group(1)))
    return libs


def canonical(path: Path) -> str:
    """Where a host file lives once symlinked directories are resolved (/lib -> /usr/lib)."""
    return str(Path(os.path.realpath(path.parent)) / path.name)


@dataclass(frozen=True)
class ImagePlan:
    """Everything that goes into the initramfs, as (guest path, host path) pairs."""

    files: tuple  # (guest_path, host_path, mode)
    symlinks: tuple  # (guest_path, target)
    modules: tuple  # (guest_path, host_path)
    module_index: str  # the generated modules.dep
    module_aliases: str  # modules.alias lines of the modules included (fs-xfs -> xfs)
    builds: tuple = ()  # (guest_path, C source): compiled into the image when it is built
    module_builtin: str = ""  # the kernel's modules.builtin: the guest's init skips those
    modules_skipped: tuple = ()  # optional modules the kernel has neither way


def plan_image(recipe: Recipe, kernel: KernelSource) -> ImagePlan:
    files, links = {}, {}
    for program, package in sorted(recipe.programs.items()):
        host = which(program)
        if host is None:
            raise ToolMissing(program, f"install the Debian package {package} (make deps)")
        files[canonical(host)] = (host, 0o755)
        if host.name != program:
            links[str(Path(canonical(host)).parent / program)] = host.name
        for lib in shared_libraries(host):
            files[canonical(lib)] = (lib, 0o755)
    for alias, program in sorted(recipe.aliases.items()):
        if program not in recipe.programs:
            raise ImageError(f"alias {alias} names {program}, which is not a program of the recipe")
        links[f"/usr/sbin/{alias}"] = canonical(which(program))
    for applet in _busybox_applets():
        links.setdefault(f"/usr/bin/{applet}", "/usr/bin/busybox")
    links["/usr/bin/sh"] = "busybox"
    for guest, local in sorted(recipe.files.items()):
        source = IMAGES_DIR / local
        if not source.is_file():
            raise ImageError(f"recipe names {local}, which is not in {IMAGES_DIR}")
        files[guest] = (source, 0o755)
    builds = {}
    for guest, local in sorted(recipe.build.items()):
        source = IMAGES_DIR / local
        if not source.is_file():
            raise ImageError(f"recipe builds {local}, which is not in {IMAGES_DIR}")
        if guest in files:
            raise ImageError(f"{guest} is both copied and built by the recipe")
        builds[guest] = source
    links = {k: v for k, v in links.items() if k not in files and k not in builds}

    chosen = select_modules(kernel.modules_dir, recipe.modules, recipe.optional, kernel.release)
    rel_modules = chosen.paths
    dep_lines = ModuleIndex.read(kernel.modules_dir).dep_lines
    index = "".join(dep_lines[p] + "\n" for p in rel_modules)
    included = {module_name(p) for p in rel_modules}
    builtin_file = kernel.modules_dir / "modules.builtin"
    alias_file = kernel.modules_dir / "modules.alias"
    aliases = "".join(
        line + "\n" for line in (alias_file.read_text().splitlines() if alias_file.is_file() else ())
        if line.startswith("alias ") and line.split()[-1].replace("-", "_") in included
    )
    base = f"/usr/lib/modules/{kernel.release}"
    modules = tuple((f"{base}/{p}", kernel.modules_dir / p) for p in rel_modules)
    return ImagePlan(
        files=tuple((g, h, m) for g, (h, m) in sorted(files.items())),
        symlinks=tuple(sorted(links.items())),
        modules=modules,
        module_index=index,
        module_aliases=aliases,
        builds=tuple(builds.items()),
        module_builtin=builtin_file.read_text() if builtin_file.is_file() else "",
        modules_skipped=chosen.skipped,
    )


def _busybox_applets() -> list[str]:
    busybox = which("busybox")
    if busybox is None:
        return []
    out = subprocess.run([str(busybox), "--list"], capture_output=True, text=True)
    return sorted(a for a in out.stdout.split() if a not in ("busybox",))


def cache_key(recipe: Recipe, kernel: KernelSource, plan: ImagePlan) -> str:
    h = hashlib.sha256()
    h.update(f"builder {BUILDER_VERSION}\n".encode())
    h.update(recipe.text.encode())
    h.update(_identity(kernel.kernel).encode())
    for guest, host, mode in plan.files:
        h.update(f"{guest} {mode:o} {_identity(host)}\n".encode())
    for guest, target in plan.symlinks:
        h.update(f"{guest} -> {target}\n".encode())
    for guest, host in plan.modules:
        h.update(f"{guest} {_identity(host)}\n".encode())
    h.update(plan.module_aliases.encode())
    h.update(plan.module_builtin.encode())
    for guest, source in plan.builds:
        h.update(f"build {guest} {' '.join(COMPILE_FLAGS)}\n".encode())
        h.update(Path(source).read_bytes())
    return h.hexdigest()[:16]


def _identity(path) -> str:
    """The repo's own files by their content alone, so that the same sources give the same
    key in any checkout; the host's files (from Debian packages) by path, size and mtime."""
    real = Path(os.path.realpath(path))
    if real.is_relative_to(IMAGES_DIR.resolve()):
        digest = hashlib.sha256(real.read_bytes()).hexdigest()
        return f"images/{real.relative_to(IMAGES_DIR.resolve())}:{digest}"
    st = os.stat(path)
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


def compile_static(source: Path, out: Path) -> Path:
    """Compile one C source into a static binary, which runs in the guest without libraries."""
    compiler = which(COMPILER)
    if compiler is None:
        raise ToolMissing(COMPILER, "install the Debian packages gcc libc6-dev (make deps)")
    argv = [str(compiler), *COMPILE_FLAGS, "-o", str(out), str(source)]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise ImageError(f"{' '.join(argv)} failed (exit code {result.returncode}):\n"
                         f"{result.stdout}{result.stderr}")
    return out


def _compile_builds(builds, out_dir: Path) -> tuple:
    """Compile the plan's programs into `out_dir`, as (guest_path, binary, mode) file entries."""
    out_dir.mkdir()
    return tuple((guest, compile_static(source, out_dir / guest.strip("/").replace("/", "-")), 0o755)
                 for guest, source in builds)


def write_initramfs(plan: ImagePlan, release: str, out_path: Path) -> None:
    dirs = {"dev", "proc", "sys", "tmp", "run", "mnt", "root", "etc", "usr/lib64"}
    entries = [p for p, _, _ in plan.files] + [p for p, _ in plan.symlinks] + [p for p, _ in plan.modules]
    for p in entries:
        parts = p.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    dirs.add(f"usr/lib/modules/{release}")
    with open(out_path, "wb") as f:
        w = CpioWriter(f)
        for d in sorted(dirs):
            w.directory(d)
        for link, target in USRMERGE_LINKS.items():
            w.symlink(link, target)
        for guest, host, mode in plan.files:
            w.file(guest, Path(host).read_bytes(), mode)
        for guest, target in plan.symlinks:
            w.symlink(guest, target)
        for guest, host in plan.modules:
            w.file(guest, Path(host).read_bytes())
        w.file(f"usr/lib/modules/{release}/modules.dep", plan.module_index.encode())
        w.file(f"usr/lib/modules/{release}/modules.alias", plan.module_aliases.encode())
        w.file(f"usr/lib/modules/{release}/modules.builtin", plan.module_builtin.encode())
        w.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
        w.file("etc/group", b"root:x:0:\n")
        w.close()


def package_versions(packages) -> dict:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${Version}\n", *sorted(set(packages))],
        capture_output=True, text=True,
    )
    return dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)


def build_image(kernel: KernelSource | None = None, recipe: Recipe | None = None,
                root: Path | None = None) -> GuestImage:
    """Return the cached image for these inputs, building it first if needed."""
    recipe = recipe or Recipe.load()
    kernel = kernel or host_kernel()
    if not kernel.kernel.is_file():
        raise ToolMissing(str(kernel.kernel), "the kernel image does not exist")
    if not (kernel.modules_dir / "modules.dep").is_file():
        raise ToolMissing(str(kernel.modules_dir / "modules.dep"), "run depmod for this kernel")
    plan = plan_image(recipe, kernel)
    key = cache_key(recipe, kernel, plan)
    root = root or cache_dir() / "images"
    final = root / key
    root.mkdir(parents=True, exist_ok=True)
    with exclusive(root / ".lock"):
        fresh = not (final / "manifest.json").is_file()
        if fresh:
            if plan.modules_skipped:
                log.info("kernel %s has no %s (optional modules): the image goes without them",
                         kernel.release, ", ".join(plan.modules_skipped))
            with space_is_fatal(root):
                _build_into(final, plan, kernel, recipe, key)
        hold(final)
        if fresh:
            prune_cache(root, keep=KEEP_IMAGES)
    manifest = json.loads((final / "manifest.json").read_text())
    return GuestImage(key, final / "kernel", final / "initramfs.cpio", kernel.release, manifest, fresh)


def _build_into(final: Path, plan: ImagePlan, kernel: KernelSource, recipe: Recipe, key: str) -> None:
    with atomic_path(final, directory=True) as staging:
        elf = pvh_kernel(kernel.kernel.read_bytes())
        if elf is None:
            shutil.copyfile(kernel.kernel, staging / "kernel")
        else:
            (staging / "kernel").write_bytes(elf)
        if plan.builds:
            plan = replace(plan, files=plan.files + _compile_builds(plan.builds, staging / "build"))
        write_initramfs(plan, kernel.release, staging / "initramfs.cpio")
        manifest = {
            "key": key,
            "kernel": str(kernel.kernel),
            "kernel_release": kernel.release,
            "boot": "bzimage" if elf is None else "pvh",
            "initramfs_bytes": (staging / "initramfs.cpio").stat().st_size,
            "packages": package_versions(recipe.programs.values()),
            "modules": len(plan.modules),
            "modules_skipped": list(plan.modules_skipped),
            "files": len(plan.files),
            "built": {guest: str(source) for guest, source in plan.builds},
        }
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
        os.chmod(staging, 0o755)
