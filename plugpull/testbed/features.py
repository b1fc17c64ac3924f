"""Filesystem feature profiles: `ext4+fast_commit`, `btrfs+compress=zstd`, ... as filesystems of
their own, each option a row of one table.

A profile is a base filesystem (a row of `fs.FILESYSTEMS`) and options in this table's order,
joined with `+`. An option is a mkfs feature, a mount option, or both; it names the kernel it
needs (the first release that has it, and the config symbols it needs when the kernel's config
is at hand) and where that is said. A profile is judged by its base's oracle rules: none of
these options changes what fsync, fdatasync or sync promise (each row's `promise` says so, with
its source).
"""

from dataclasses import dataclass, replace

from plugpull.errors import UsageError
from plugpull.kernels.versions import upstream_numbers

SEP = "+"


@dataclass(frozen=True)
class Feature:
    name: str  # as it stands after the `+`: a mount option's own spelling, or a mkfs feature's
    fs: str  # the kernel's filesystem it is for (a base's mount type)
    mkfs: tuple[str, ...] = ()
    mount: tuple[str, ...] = ()
    since: tuple[int, int] = (0, 0)  # the first upstream release that has it
    config: tuple[str, ...] = ()  # CONFIG_ symbols it needs, where the kernel's config is known
    source: str = ""  # where `since`, `config` and the promise are said
    summary: str = ""
    promise: str = "the base's: fsync, fdatasync and sync promise what they promise without it"

    @property
    def key(self) -> str:
        """Two options with one key cannot go together (`data=journal` and `data=ordered`)."""
        return self.name.split("=", 1)[0]


FEATURES = {
    f.name: f
    for f in (
        Feature("fast_commit", "ext4", mkfs=("-O", "fast_commit"), since=(5, 10),
                source="Linux 5.10, commit aa75f4d3daae (ext4: main fast-commit commit path); "
                       "Documentation/filesystems/ext4/journal.rst, Fast commits",
                summary="fsync commits a compact record of the inode's changes instead of a full "
                        "journal transaction, when it can"),
        Feature("data=journal", "ext4", mount=("data=journal",), since=(2, 6),
                source="Documentation/admin-guide/ext4.rst, data=journal",
                summary="file data goes through the journal before its home location"),
        Feature("inline_data", "ext4", mkfs=("-O", "inline_data"), since=(3, 8),
                source="Linux 3.8 (inline data); ext4(5), inline_data",
                summary="small files and directories kept inside the inode"),
        Feature("compress=zstd", "btrfs", mount=("compress=zstd",), since=(4, 14),
                source="Linux 4.14 (zstd in btrfs); btrfs(5), compress",
                summary="file data compressed with zstd where it shrinks"),
        Feature("nodatacow", "btrfs", mount=("nodatacow",), since=(2, 6),
                source="btrfs(5), nodatacow",
                summary="data overwritten in place, with no data checksums (nodatasum)"),
        Feature("holes", "btrfs", mkfs=("-O", "^no-holes"), since=(2, 6),
                source="mkfs.btrfs(8), FILESYSTEM FEATURES, no-holes (a default since btrfs-progs 5.15; "
                       "without it, the format every kernel reads)",
                summary="made without no-holes (mkfs -O ^no-holes): each hole an extent item of its own"),
        Feature("commit=1", "btrfs", mount=("commit=1",), since=(3, 12),
                source="Linux 3.12 (commit=); btrfs(5), commit",
                summary="a transaction committed every second, not every 30"),
        Feature("compress", "f2fs", mkfs=("-O", "extra_attr,compression"),
                mount=("compress_algorithm=lz4", "compress_extension=*"), since=(5, 9),
                config=("CONFIG_F2FS_FS_COMPRESSION", "CONFIG_F2FS_FS_LZ4"),
                source="Linux 5.6 (compression), 5.9 (compress_extension=* for every file, commit "
                       "fa6795552ad2); Documentation/filesystems/f2fs.rst, Compression implementation",
                summary="every file compressed in clusters of 4 blocks with lz4"),
    )
}


def split(name: str) -> tuple[str, list[str]]:
    base, *options = name.split(SEP)
    return base, options


def profile(base, name: str):
    """The Filesystem row `base` with the options of `name` (`BASE+OPT+OPT`) added; a UsageError
    naming what is wrong: an unknown option, one not for this filesystem, one twice, two
    that cannot go together, or options out of the table's order (the one spelling a profile
    has, so that results and journals name it one way)."""
    _, options = split(name)
    chosen = []
    for option in options:
        feature = FEATURES.get(option)
        if feature is None:
            ours = [f.name for f in FEATURES.values() if f.fs == base.mount_type]
            raise UsageError(f"filesystem {name!r}: unknown option {option!r} for {base.name}; known: "
                             f"{', '.join(ours) or 'none'}")
        if feature.fs != base.mount_type:
            raise UsageError(f"filesystem {name!r}: {option} is an option of {feature.fs}, not of {base.name}")
        if any(f.key == feature.key for f in chosen):
            raise UsageError(f"filesystem {name!r}: {option} twice, or with another {feature.key}")
        chosen.append(feature)
    order = list(FEATURES)
    canonical = SEP.join([base.name, *sorted(options, key=order.index)])
    if canonical != name:
        raise UsageError(f"filesystem {name!r}: write it {canonical!r} (options in the table's order)")
    return replace(base, name=name, kernel_type=base.mount_type,
                   mkfs=(*base.mkfs, *(w for f in chosen for w in f.mkfs)),
                   mount_options=(*base.mount_options, *(o for f in chosen for o in f.mount)),
                   profile=base.rules, summary=f"{base.summary or base.name}; " + "; ".join(f.summary for f in chosen),
                   features=tuple(f.name for f in chosen))


def check_kernel(fs, release: str, config: dict[str, str] | None) -> None:
    """A UsageError, before anything runs, if the kernel `release` lacks one of the profile's
    options: older than its first release, or (when its config is known) without a symbol it
    needs."""
    numbers = upstream_numbers(release)
    for option in getattr(fs, "features", ()):
        feature = FEATURES[option]
        if numbers and tuple(numbers[:2]) < feature.since:
            raise UsageError(f"--fs {fs.name}: {option} needs Linux {'.'.join(map(str, feature.since))} or later; "
                             f"this kernel is {release}")
        missing = [c for c in feature.config if config is not None and config.get(c) not in ("y", "m")]
        if missing:
            raise UsageError(f"--fs {fs.name}: kernel {release} is built without {', '.join(missing)}, "
                             f"which {option} needs")

