"""How many lines a cold `make bzImage modules` will print, estimated from the tree and its
.config before anything is compiled: the ETA of a first build.

kbuild decides what to compile from each folder's Kbuild (or Makefile): `obj-y += a.o b/`,
`obj-$(CONFIG_X) += x.o` (built in or a module, as the .config says), `lib-y`, and the parts
of a composite object (`x-y += p.o q.o`, `x-objs`, `x-$(CONFIG_Y)`). Walking those lines from
the top folders, keeping what the .config selects, counts the objects compiled (one `CC` line
each), the modules (a `.mod.o` compiled and a `.ko` linked: two more lines each) and the
folders (an `AR` of each folder's objects). What the walk does not model (`ifdef` blocks,
objects named through other variables) makes the count approximate; `FIXED` lines stand for
the steps every build prints once (host programs, generated headers, the links of vmlinux and
bzImage). The ETA runs at the rate seen so far, so an estimate a tenth off is an ETA a tenth off.
"""

import re
from pathlib import Path

# The lines every cold build prints once: Debian's 7.3 with x86_64's defconfig printed 4,495,
# 3,379 of them CC, for 3,118 objects, 56 modules and 805 folders by this count (docs/kernels.md).
FIXED = 200
_ASSIGN = re.compile(r"^([A-Za-z0-9_]+)-(y|m|objs|\$\(CONFIG_([A-Za-z0-9_]+)\))\s*(?:\+=|:=|=)\s*(.*)$")
_TOP = ("obj", "core", "drivers", "libs", "net", "virt", "init", "lib")
_SUBST = {"$(SRCARCH)": "x86", "$(ARCH)": "x86", "$(BITS)": "64", "$(srctree)/": "", "$(src)/": ""}


def estimated_lines(tree: Path, config: dict[str, str]) -> int:
    """The lines a cold build of `tree` with `config` (option -> value) prints, estimated."""
    objects, modules, folders = count(tree, config)
    return objects + 2 * modules + folders + FIXED


def count(tree: Path, config: dict[str, str]) -> tuple[int, int, int]:
    """(objects compiled, modules linked, folders entered) for `config`, walking the folders
    kbuild descends into."""
    tree = Path(tree)
    start = []
    for top in (tree / "Kbuild", tree / "Makefile", tree / "arch" / "x86" / "Makefile"):
        start += [word for name, selected, word in _assignments(top, config)
                  if name in _TOP and selected and word.endswith("/")]
    seen, objects, modules = set(), 0, 0
    todo = [folder.strip("/") for folder in start]
    while todo:
        folder = todo.pop()
        if folder in seen or not (tree / folder).is_dir():
            continue
        seen.add(folder)
        found, subdirs = _folder(tree / folder, config)
        objects += found[0]
        modules += found[1]
        todo += [f"{folder}/{sub.strip('/')}" for sub in subdirs]
    return objects, modules, len(seen)


def _folder(folder: Path, config: dict[str, str]) -> tuple[tuple[int, int], list[str]]:
    """((objects, modules), subfolders) that one folder's Kbuild file selects."""
    makefile = folder / "Kbuild" if (folder / "Kbuild").is_file() else folder / "Makefile"
    lines = _assignments(makefile, config, with_mode=True)
    parts: dict[str, list[str]] = {}
    for name, selected, word, _ in lines:
        if name not in ("obj", "lib", "subdir") and selected:
            parts.setdefault(name, []).append(word)
    objects, modules, subdirs = 0, 0, []
    for name, selected, word, mode in lines:
        if name not in ("obj", "lib", "subdir") or not selected:
            continue
        if word.endswith("/"):
            subdirs.append(word)
        elif word.endswith(".o"):
            objects += _parts(word[:-2], parts, set())
            modules += mode == "m"
    return (objects, modules), subdirs


def _parts(name: str, parts: dict[str, list[str]], seen: set[str]) -> int:
    """The objects compiled for `name.o`: itself, or its parts when it is a composite object."""
    if name not in parts or name in seen:
        return 1
    seen.add(name)
    return sum(_parts(word[:-2], parts, seen) for word in parts[name] if word.endswith(".o"))


def _assignments(makefile: Path, config: dict[str, str], with_mode: bool = False) -> list[tuple]:
    """(variable, selected by the config, word[, 'y' or 'm']) for each word of each
    `NAME-SELECTOR += words` line of a Makefile (continuation lines joined)."""
    try:
        text = makefile.read_text(errors="replace")
    except OSError:
        return []
    found = []
    for line in text.replace("\\\n", " ").splitlines():
        m = _ASSIGN.match(line.strip())
        if not m:
            continue
        selector, option = m.group(2), m.group(3)
        mode = config.get(f"CONFIG_{option}") if option else ("m" if selector == "m" else "y")
        words = _expand(m.group(4).split("#", 1)[0]).split()
        for word in words:
            if "$(" not in word:
                entry = (m.group(1), mode in ("y", "m"), word)
                found.append((*entry, mode) if with_mode else entry)
    return found


def _expand(text: str) -> str:
    for variable, value in _SUBST.items():
        text = text.replace(variable, value)
    return text
