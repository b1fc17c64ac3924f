"""The kernel config of a build, cut to the guest: the tree's `allnoconfig`, the kernel's own
`kvm_guest.config` (`make kvm_guest.config`: kernel/configs/ or arch/x86/configs/), plugpull's
fragment (`vmconfig/kernel.config`, the one place that says what the guests need) and the
user's `--config` fragment after it, merged, then `make olddefconfig`. Every option the
fragments ask for must be declared by the tree's Kconfig (else the build is refused before
anything is compiled) and is checked in the final .config (a dependency Kconfig would not
satisfy is refused too).

A fragment holds `CONFIG_X=VALUE` lines and `# CONFIG_X is not set` lines (or `CONFIG_X=n`);
other comments and blank lines are ignored, anything else is refused. An option that only
some kernels declare is marked at the end of its line with the versions that have it:
`# in 5.18+`, `# in -6.1` or `# in 5.6-6.1` (MAJOR.MINOR, both ends included); on a tree of
another version the line is not asked.
"""

import re
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import atomic_write, read_input_text
from plugpull.kernels.dotconfig import SET, UNSET, values
from plugpull.paths import VMCONFIG_DIR

FRAGMENT = VMCONFIG_DIR / "kernel.config"
BASE = "allnoconfig"
GUEST = "kvm_guest.config"
FRAGMENT_MAX = 4 << 20  # Debian 12's whole kernel config (6.1) is 254 KiB
_MARK = re.compile(r"^(.*?)\s+#\s*in\s+(\S*)\s*$")
_RANGE = re.compile(r"^(\d+\.\d+)?(\+|-)(\d+\.\d+)?$")


def parse_fragment(text: str, where: str, version: tuple[int, int] | None = None) -> dict[str, str | None]:
    """Option -> asked value (None: not set); a later line overrides an earlier one. With the
    tree's `version`, the lines marked for other versions are left out."""
    wanted = {}
    for number, line in enumerate(text.splitlines(), 1):
        line, versions = _versions(line.strip(), f"{where} line {number}")
        set_, unset = SET.match(line), UNSET.match(line)
        if (set_ or unset) and version is not None and not _within(version, versions):
            continue
        if set_:
            wanted[set_.group(1)] = None if set_.group(2) == "n" else set_.group(2)
        elif unset:
            wanted[unset.group(1)] = None
        elif line and not line.startswith("#"):
            raise UsageError(f"{where} line {number}: {line[:60]!r} is neither CONFIG_X=VALUE nor "
                             f"'# CONFIG_X is not set'")
    return wanted


def _versions(line: str, where: str) -> tuple[str, tuple]:
    """A line without its `# in A.B+` mark, and the versions the mark names ((lo, hi), None: open)."""
    m = _MARK.match(line)
    if not m or not (SET.match(m.group(1)) or UNSET.match(m.group(1))):
        return line, (None, None)
    r = _RANGE.match(m.group(2))
    if not r or (r.group(2) == "+" and (not r.group(1) or r.group(3))) or not (r.group(1) or r.group(3)):
        raise UsageError(f"{where}: {line[len(m.group(1)):].strip()!r}: write the versions as "
                         f"'# in 5.18+', '# in -6.1' or '# in 5.6-6.1'")
    return m.group(1), (_numbers(r.group(1)), _numbers(r.group(3)))


def _numbers(text: str | None) -> tuple[int, int] | None:
    return tuple(int(n) for n in text.split(".")) if text else None


def _within(version: tuple[int, int], versions: tuple) -> bool:
    low, high = versions
    return (low is None or version >= low) and (high is None or version <= high)


def tree_version(tree: Path) -> tuple[int, int] | None:
    """MAJOR.MINOR of a kernel tree, from its top Makefile's VERSION and PATCHLEVEL."""
    try:
        text = Path(tree, "Makefile").read_text(errors="replace")
    except OSError:
        return None
    found = dict(re.findall(r"^(VERSION|PATCHLEVEL)\s*=\s*(\d+)\s*$", text, re.MULTILINE))
    return (int(found["VERSION"]), int(found["PATCHLEVEL"])) if len(found) == 2 else None


def guest_config(tree: Path) -> str | None:
    """The make target of the kernel's own `kvm_guest.config`, when the tree has one."""
    for folder in ("kernel/configs", "arch/x86/configs"):
        if (Path(tree) / folder / GUEST).is_file():
            return GUEST
    return None


def fragment_text(user: Path | None) -> str:
    """plugpull's fragment, then the user's: the text the cache key holds."""
    ours = FRAGMENT.read_text()
    if user is None:
        return ours
    theirs = read_input_text(user, "--config", FRAGMENT_MAX)
    parse_fragment(theirs, f"--config {user}")
    return f"{ours}\n# --config {Path(user).name}\n{theirs}"


def defined(tree: Path, options) -> set[str]:
    """Those of `options` some Kconfig file of `tree` declares (`config X` or `menuconfig X`)."""
    names = {option.removeprefix("CONFIG_") for option in options}
    declared = re.compile(r"^\s*(?:menu)?config\s+(\w+)\s*$", re.MULTILINE)
    found = set()
    for kconfig in tree.rglob("Kconfig*"):
        if kconfig.is_file():
            found |= names & set(declared.findall(kconfig.read_text(errors="replace")))
    return {f"CONFIG_{name}" for name in found}


def merge(config: Path, wanted: dict[str, str | None]) -> None:
    """The asked values written over a .config's (as scripts/kconfig/merge_config.sh does)."""
    kept = [line for line in config.read_text().splitlines() if _option(line) not in wanted]
    asked = [f"{k}={v}" if v is not None else f"# {k} is not set" for k, v in wanted.items()]
    atomic_write(config, "\n".join([*kept, *asked]) + "\n")


def _option(line: str) -> str | None:
    m = SET.match(line) or UNSET.match(line)
    return m.group(1) if m else None


def unmet(config_text: str, wanted: dict[str, str | None]) -> list[str]:
    """The asked options the final .config does not have as asked: `CONFIG_X=m (got y)`."""
    got = values(config_text)
    misses = []
    for option, value in wanted.items():
        have = got.get(option)
        if have != value and not (value is None and have in (None, "n")):
            shown = "not set" if value is None else value
            misses.append(f"{option}={shown} (got {have if have is not None else 'not set'})")
    return misses


def refuse_undeclared(tree: Path, wanted: dict[str, str | None], where: str) -> None:
    """A `UsageError` naming every asked option the tree's Kconfig does not declare."""
    unknown = sorted(set(wanted) - defined(tree, wanted))
    if unknown:
        raise UsageError(f"the kernel tree of {where} does not declare what was asked: {', '.join(unknown)} "
                         f"(mark an option only some kernels have with '# in 5.18+', docs/kernels.md)")


def check_config(config: Path, wanted: dict[str, str | None], where: str) -> None:
    """A `UsageError` naming every asked option the final .config lacks."""
    misses = unmet(config.read_text(), wanted)
    if misses:
        raise UsageError(f"the kernel config of {where} lacks what was asked: {', '.join(misses)} "
                         f"(Kconfig's dependencies did not allow it)")
