"""A kernel's .config, read by one rule: `CONFIG_X=VALUE` lines set an option, `# CONFIG_X is
not set` lines unset one. The build reads the .config it made and the fragments it merges
(kernels/build/config.py); a profile's options are checked against the config kept beside a
kernel (testbed/features.py)."""

import re
from pathlib import Path

SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


def values(config_text: str) -> dict[str, str]:
    """A .config's set options: option -> value, as written (a string keeps its quotes)."""
    return {m.group(1): m.group(2) for m in map(SET.match, config_text.splitlines()) if m}


def read(path: Path | None) -> dict[str, str] | None:
    """A kernel's .config as {option: value}, a string's quotes taken off; None if there is
    none to read."""
    if path is None or not path.is_file():
        return None
    return {option: value.strip('"') for option, value in values(path.read_text(errors="replace")).items()}


def beside(kernel_file: Path, modules_dir: Path) -> Path | None:
    """Where a kernel's config is kept: beside its image (/boot/config-RELEASE, a Debian
    package's tree; `config`, as `plugpull kernels build` keeps it beside bzImage), or in its
    modules tree (`config`, as a build leaves it)."""
    release = modules_dir.name
    for path in (kernel_file.parent / f"config-{release}", kernel_file.parent / "config", modules_dir / "config",
                 modules_dir.parents[2] / "boot" / f"config-{release}" if len(modules_dir.parents) > 2 else None):
        if path is not None and path.is_file():
            return path
    return None
