"""Which of a kernel's modules go into the guest image, by rule rather than by name.

The recipe (`images/guest.toml`, `[kernel]`) splits the modules it asks for in two:
- `modules`: required, the drivers a guest cannot run without (disk buses, virtio, the
  filesystems, device mapper, md). A kernel that has one neither as a module nor built in
  cannot run the lab: `KernelUnfit`, before anything boots.
- `optional`: helpers that some kernels build in, rename or dropped (the crc32c, xxhash and
  blake2b drivers, ecb): one that is absent is skipped, and said.
A module the kernel builds in (listed in its `modules.builtin`) counts as present for both.
"""

from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import ImageError, KernelUnfit


def module_name(path: str) -> str:
    """`kernel/fs/xfs/xfs.ko.xz` -> `xfs`; dashes read as underscores, as the kernel does."""
    base = path.rsplit("/", 1)[-1]
    return base.split(".ko")[0].replace("-", "_")


@dataclass(frozen=True)
class ModuleIndex:
    """A kernel's modules as its `modules.dep` and `modules.builtin` list them."""

    deps: dict  # module path -> the paths it depends on
    by_name: dict  # module name -> path
    builtin: frozenset
    dep_lines: dict  # module path -> its modules.dep line

    @classmethod
    def read(cls, modules_dir: Path) -> "ModuleIndex":
        deps, by_name, lines = {}, {}, {}
        for line in (modules_dir / "modules.dep").read_text().splitlines():
            path, _, rest = line.partition(":")
            deps[path], by_name[module_name(path)], lines[path] = rest.split(), path, line
        builtin_file = modules_dir / "modules.builtin"
        builtin = frozenset(module_name(p) for p in builtin_file.read_text().split()) if builtin_file.is_file() \
            else frozenset()
        return cls(deps, by_name, builtin, lines)

    def has(self, name: str) -> bool:
        key = name.replace("-", "_")
        return key in self.by_name or key in self.builtin


@dataclass(frozen=True)
class ModuleSet:
    """The modules to copy (paths in load order, dependencies first), the requested names the
    kernel builds in, and the optional names it lacks."""

    paths: tuple[str, ...]
    builtin: tuple[str, ...]
    skipped: tuple[str, ...]


def select_modules(modules_dir: Path, required, optional=(), release: str | None = None) -> ModuleSet:
    """Apply the rule: every required module present (as a module or built in), or
    `KernelUnfit` naming all that are not; optional ones absent are skipped."""
    both = sorted(set(required) & set(optional))
    if both:
        raise ImageError(f"the recipe lists {', '.join(both)} as both required and optional")
    index = ModuleIndex.read(modules_dir)
    release = release or modules_dir.name
    missing = [n for n in required if not index.has(n)]
    if missing:
        raise KernelUnfit(f"kernel {release} lacks the required module(s) {', '.join(missing)}: neither in "
                          f"its modules.dep nor built in (the guest needs them; images/guest.toml [kernel] modules)")
    skipped = tuple(n for n in optional if not index.has(n))
    wanted = [n.replace("-", "_") for n in (*required, *optional) if n not in skipped]
    paths, seen = [], set()

    def visit(path):
        if path not in seen:
            seen.add(path)
            for dep in index.deps.get(path, ()):
                visit(dep)
            paths.append(path)

    for key in wanted:
        if key in index.by_name:
            visit(index.by_name[key])
    builtin = tuple(n for n in wanted if n not in index.by_name and n in index.builtin)
    return ModuleSet(tuple(paths), builtin, skipped)
