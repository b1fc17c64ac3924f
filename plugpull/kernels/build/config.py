"""The kernel config of a build: the tree's own x86_64 defconfig, plugpull's fragment
(`vmconfig/kernel.config`, the one place that says what the guests need) and the user's
`--config` fragment after it, merged, then `make olddefconfig`; then every option the
fragments ask for is checked in the final .config, and a build whose Kconfig would not give
one is refused, naming them. An option the tree's Kconfig does not define at all (one added
after that kernel, `CONFIG_DEBUG_INFO_NONE` before 5.18) cannot be had there and is not asked.

A fragment holds `CONFIG_X=VALUE` lines and `# CONFIG_X is not set` lines (or `CONFIG_X=n`);
other comments and blank lines are ignored, anything else is refused.
"""

import re
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import atomic_write, read_input_text
from plugpull.paths import VMCONFIG_DIR

FRAGMENT = VMCONFIG_DIR / "kernel.config"
BASE = "defconfig"
FRAGMENT_MAX = 4 << 20  # Debian 12's whole kernel config (6.1) is 254 KiB
_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


def parse_fragment(text: str, where: str) -> dict[str, str | None]:
    """Option -> asked value (None: not set); a later line overrides an earlier one."""
    wanted = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        set_, unset = _SET.match(line), _UNSET.match(line)
        if set_:
            wanted[set_.group(1)] = None if set_.group(2) == "n" else set_.group(2)
        elif unset:
            wanted[unset.group(1)] = None
        elif line and not line.startswith("#"):
            raise UsageError(f"{where} line {number}: {line[:60]!r} is neither CONFIG_X=VALUE nor "
                             f"'# CONFIG_X is not set'")
    return wanted


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
    m = _SET.match(line) or _UNSET.match(line)
    return m.group(1) if m else None


def values(config_text: str) -> dict[str, str]:
    """A .config's set options: option -> value."""
    return {m.group(1): m.group(2) for m in map(_SET.match, config_text.splitlines()) if m}


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


def check_config(config: Path, wanted: dict[str, str | None], where: str) -> None:
    """A `UsageError` naming every asked option the final .config lacks."""
    misses = unmet(config.read_text(), wanted)
    if misses:
        raise UsageError(f"the kernel config of {where} lacks what was asked: {', '.join(misses)} "
                         f"(Kconfig's dependencies did not allow it)")
