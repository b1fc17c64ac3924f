"""A reproducer on a feature profile (`ext4+fast_commit`, `btrfs+compress=zstd`; testbed/features.py):
what each form adds for the profile's options.

The sh script first makes and mounts the base filesystem without the options (the control:
the device, mkfs and mount work), then checks what the kernel says of the options in sysfs,
then makes and mounts the profile. A failure after the control is the profile's lack of
support, refused with exit 2 as a missing tool is, never a verdict. An option a kernel without
it would silently ignore (ext4's fast_commit is a compatible feature: an old kernel mounts the
filesystem and commits without it) is refused by its sysfs file.

The fstests test calls fstests' own guard where it has one, makes the filesystem with
`_scratch_mkfs` and the options' mkfs arguments, and takes the mount options in MOUNT_OPTIONS
(fstests/own_mount_options)."""

import shlex
from dataclasses import dataclass

from plugpull.testbed.features import FEATURES, SEP, split
from plugpull.testbed.fs import FILESYSTEMS, Filesystem


@dataclass(frozen=True)
class Need:
    """What a reproducer checks of one option: the sysfs file a kernel with it has (where one
    says more than a mount would), and fstests' guard for it (None: fstests has none)."""

    sysfs: str | None = None
    guard: str | None = None


NEEDS = {
    "fast_commit": Need("/sys/fs/ext4/features/fast_commit", "_require_scratch_ext4_feature fast_commit"),
    "data=journal": Need(),
    "inline_data": Need(guard="_require_scratch_ext4_feature inline_data"),
    "compress=zstd": Need("/sys/fs/btrfs/features/compress_zstd", "_require_btrfs_fs_feature compress_zstd"),
    "nodatacow": Need(),
    "holes": Need(),
    "commit=1": Need(),
    "compress": Need("/sys/fs/f2fs/features/compression", "_require_scratch_f2fs_compression lz4"),
}


def is_profile(fs: Filesystem) -> bool:
    return bool(fs.features)


def base_of(fs: Filesystem) -> Filesystem:
    """The row a profile is made from (a plain row is its own)."""
    return FILESYSTEMS[split(fs.name)[0]] if SEP in fs.name else fs


def mkfs_words(fs: Filesystem) -> list[str]:
    """The profile's own mkfs arguments (`-O fast_commit`)."""
    return [w for f in fs.features for w in FEATURES[f].mkfs]


def _how(option: str) -> str:
    f = FEATURES[option]
    made = [f"mkfs {' '.join(f.mkfs)}"] * bool(f.mkfs) + [f"mount -o {','.join(f.mount)}"] * bool(f.mount)
    since = f"Linux {'.'.join(map(str, f.since))} on" if f.since > (2, 6) else "any Linux"
    config = f", {' and '.join(f.config)}" if f.config else ""
    return f"{option}: {', '.join(made)}; {since}{config}"


def header_lines(fs: Filesystem) -> list[str]:
    """The sh script's header lines for a profile: what it is made of and what it needs."""
    if not is_profile(fs):
        return []
    return [f"# Profile {fs.name}: {base_of(fs).name} with these options, each needing what it says:",
            *(f"#   {_how(o)}" for o in fs.features),
            "# A system that cannot make or mount it (mkfs or kernel without an option) is refused: exit 2."]


def _mkfs(fs: Filesystem, device: str) -> str:
    return " ".join(fs.mkfs_argv(device)) + " >/dev/null"


def mount_command(fs: Filesystem, device: str = '"/dev/mapper/$name"') -> str:
    options = f" -o {shlex.quote(','.join(fs.mount_options))}" if fs.mount_options else ""  # f2fs's `*` quoted
    return f'mount -t {fs.mount_type}{options} {device} "$mnt"'


UNSUPPORTED = ["unsupported() {  # this system cannot make or mount the profile: no verdict",
               '\techo "unsupported: $*" >&2',
               "\texit 2",
               "}"]


def sh_control(fs: Filesystem, device: str = '"$dev"') -> list[str]:
    """The sh lines before a profile is made (none for a plain filesystem): the base made and
    mounted on `device` and unmounted, `mnt` made; then the options' sysfs files."""
    if not is_profile(fs):
        return []
    base = base_of(fs)
    lines = [*UNSUPPORTED,
             f"# the control: {base.name} without {'+'.join(fs.features)}, made and mounted (device, mkfs, mount work)",
             'mnt=$(mktemp -d) || die "mktemp failed"',
             f'{_mkfs(base, device)} || die "mkfs of {base.name} failed"',
             f'{mount_command(base, device)} || die "mount of {base.name} failed"',
             'umount "$mnt" || die "umount failed"']
    for option in fs.features:
        if NEEDS[option].sysfs:
            lines.append(f'[ -e {NEEDS[option].sysfs} ] || unsupported "this kernel has no {fs.mount_type} {option} '
                         f'({NEEDS[option].sysfs})"')
    return lines


def sh_mkfs(fs: Filesystem, device: str = '"$dev"') -> str:
    """The mkfs line: a profile's failure after the control is the options' lack of support."""
    if not is_profile(fs):
        return f'{_mkfs(fs, device)} || die "mkfs failed"'
    words = " ".join(mkfs_words(fs))
    if not words:
        return f'{_mkfs(fs, device)} || die "mkfs failed"'
    return f'{_mkfs(fs, device)} || unsupported "{fs.mkfs[0]} {words} failed: it cannot make {fs.name}"'


def sh_mount(fs: Filesystem, device: str) -> str:
    """The first mount's line: a profile's failure after the control is the kernel's lack of
    support."""
    if not is_profile(fs):
        return f'{mount_command(fs, device)} || die "mount failed"'
    return f'{mount_command(fs, device)} || unsupported "the kernel did not mount {fs.name} (see dmesg)"'


def fstests_guards(fs: Filesystem) -> list[str]:
    """A test's lines that skip it where the profile cannot be made: another FSTYP, and
    fstests' own guard of each option that has one."""
    if not is_profile(fs):
        return []
    guards = [NEEDS[o].guard for o in fs.features if NEEDS[o].guard]
    return [f'[ "$FSTYP" = "{fs.mount_type}" ] || _notrun "a test of {fs.name}: FSTYP={fs.mount_type} only"', *guards]


def fstests_mkfs(fs: Filesystem, helper: str = "_scratch_mkfs") -> str:
    """fstests' mkfs call with the profile's mkfs arguments."""
    return " ".join([helper, *mkfs_words(fs)])
