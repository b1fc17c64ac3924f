"""What plugpull knows of each filesystem and each barrier/cache mode: table rows, not branches."""

from collections.abc import Mapping
from dataclasses import dataclass

from plugpull.errors import UsageError
from plugpull.kernels import dotconfig
from plugpull.values import shown
from plugpull.testbed.features import SEP, check_kernel, profile, split


E2FSCK_BITS = 1 | 2 | 4 | 8 | 16 | 32 | 128
# xfsprogs refuses logs under 64 MiB on filesystems over 300 MB unless it runs under fstests;
# these three variables are how fstests says so, and how a 2008-sized log can still be made.
FSTESTS_ENV = (("TEST_DIR", "/tmp"), ("TEST_DEV", "plugpull"), ("QA_CHECK_FS", "1"))


@dataclass(frozen=True)
class Filesystem:
    name: str
    mkfs: tuple[str, ...]
    fsck: str
    fsck_clean: frozenset
    fsck_damage: frozenset
    nobarrier_option: str | None = None
    fsck_damage_bits: int = 0  # for fsck tools whose exit code is a bit mask
    kernel_type: str = ""  # the type `mount -t` takes, when it is not the name
    mount_options: tuple[str, ...] = ()  # in every mode
    internal_log: tuple[str, ...] = ()  # mkfs options for a log inside the filesystem
    mkfs_env: tuple[tuple[str, str], ...] = ()
    summary: str = ""
    min_mib: int = 64  # the smallest disk its mkfs formats
    profile: str = ""  # the model oracle's rules it is judged by (generate/oracle.py), if not its name's
    features: tuple[str, ...] = ()  # a profile's options (testbed/features.py), in the table's order

    @property
    def rules(self) -> str:
        return self.profile or self.name

    def check_size(self, mib: int, flag: str = "--disk-mib") -> None:
        """A UsageError, before any work, for a disk too small for this filesystem's mkfs."""
        if mib < self.min_mib:
            raise UsageError(f"{flag} {mib}: {self.mkfs[0]} needs a disk of at least {self.min_mib} MiB for {self.name}")

    @property
    def mount_type(self) -> str:
        return self.kernel_type or self.name

    def mkfs_argv(self, target: str, external_log: tuple[str, ...] = ()) -> list[str]:
        """mkfs's command line; `external_log`'s options replace the internal log's."""
        return [*self.mkfs, *(external_log or self.internal_log), target]

    def fsck_meaning(self, rc: int) -> str:
        """'clean', 'damage', or 'failed' (the checker itself did not work)."""
        if rc in self.fsck_clean:
            return "clean"
        if rc in self.fsck_damage:
            return "damage"
        if self.fsck_damage_bits and 0 < rc and not rc & ~E2FSCK_BITS and rc & self.fsck_damage_bits:
            return "damage"
        return "failed"


class Filesystems(Mapping):
    """The filesystems by name: the rows below, and each row with feature options
    (`ext4+fast_commit`, testbed/features.py), made when named. Iterating gives the rows."""

    def __init__(self, rows):
        self._rows = {fs.name: fs for fs in rows}

    def __getitem__(self, name):
        if name in self._rows:
            return self._rows[name]
        return self.profile(name)

    def profile(self, name) -> Filesystem:
        """The row with options `name` names; KeyError for an unknown base, UsageError for
        options that are wrong."""
        base = self._rows.get(split(name)[0]) if isinstance(name, str) and SEP in name else None
        if base is None:
            raise KeyError(name)
        return profile(base, name)

    def __contains__(self, name) -> bool:
        try:
            self[name]
        except (KeyError, UsageError):
            return False
        return True

    def __iter__(self):
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


FILESYSTEMS = Filesystems(
    fs
    for fs in (
        # xfs_repair -n: 1 = corruption found; 2 = a dirty log it will not read.
        # xfsprogs formats nothing under 300 MB; btrfs-progs 6.2 nothing under 109 MiB.
        Filesystem("xfs", ("mkfs.xfs", "-q", "-f"), "xfs_repair -n",
                   frozenset({0}), frozenset({1, 2}), min_mib=300),
        # e2fsck's exit code is a bit mask: 4 = errors left uncorrected, 8 = operational error.
        # With -n a damaged fs can give 12 (it found damage, then could not go on): damage.
        Filesystem("ext4", ("mkfs.ext4", "-q", "-F"), "e2fsck -fn",
                   frozenset({0}), frozenset(), nobarrier_option="nobarrier", fsck_damage_bits=1 | 2 | 4),
        # Seed 000's mkfs.xfs output (xfsprogs of 2008): v4 (no CRC), 256-byte inodes, no
        # ftype or 32-bit project ids, a 2625-block internal log; logbsize/logbufs as then.
        Filesystem("xfs-2008", ("mkfs.xfs", "-q", "-f", "-m", "crc=0", "-n", "ftype=0",
                                "-i", "projid32bit=0"), "xfs_repair -n",
                   frozenset({0}), frozenset({1, 2}), kernel_type="xfs",
                   mount_options=("logbsize=32k", "logbufs=2"),
                   internal_log=("-l", "size=2625b,lazy-count=1"), mkfs_env=FSTESTS_ENV, min_mib=300,
                   summary="XFS as seed 000 made it: v4, a 10 MiB log, 2 log buffers of 32 KiB"),
        # ext3's on-disk format (no extents, no flex_bg, no 64bit) run by the ext4 driver, as
        # the guest has no ext3 driver; nodelalloc, since ext3 allocated at write time.
        Filesystem("ext3", ("mkfs.ext3", "-q", "-F"), "e2fsck -fn",
                   frozenset({0}), frozenset(), nobarrier_option="nobarrier", fsck_damage_bits=1 | 2 | 4,
                   kernel_type="ext4", mount_options=("nodelalloc",),
                   summary="ext3's format (mkfs.ext3) mounted by ext4, without delayed allocation"),
        Filesystem("btrfs", ("mkfs.btrfs", "-q", "-f"), "btrfs check --readonly",
                   frozenset({0}), frozenset({1}), nobarrier_option="nobarrier", min_mib=110),
        # fsck.f2fs (f2fs-tools 1.15, fsck/main.c do_fsck, fsck(8)'s codes since 2020's "correct
        # return value"): 0 nothing found; 1 damage found that it would correct (--dry-run
        # writes nothing); 4 damage left uncorrected; 8 operational error, 255 (-1) any other
        # failure (a bad superblock too, and a prompt for lost files left unanswered). Its usage
        # error is 1 as well, which this fixed command line does not give. mkfs.f2fs 1.15
        # formats nothing under 52 MiB (measured on sparse files).
        Filesystem("f2fs", ("mkfs.f2fs", "-q", "-f"), "fsck.f2fs --dry-run",
                   frozenset({0}), frozenset({1, 4}), nobarrier_option="nobarrier", min_mib=52,
                   summary="F2FS with its defaults (fsync_mode=posix)"),
        # fsync_mode=strict (commit 93cf93f17c8e, March 2018): fsync checkpoints after a directory
        # operation in the file's directory, "in line with xfs, ext4 and btrfs, where xfstest
        # generic/342 will pass" (the option's documentation); the default, posix, does not.
        Filesystem("f2fs-strict", ("mkfs.f2fs", "-q", "-f"), "fsck.f2fs --dry-run",
                   frozenset({0}), frozenset({1, 4}), nobarrier_option="nobarrier", min_mib=52,
                   kernel_type="f2fs", mount_options=("fsync_mode=strict",), profile="f2fs",
                   summary="F2FS with fsync_mode=strict (generic/342's rename then new file kept)"),
    )
)


def filesystem(name: str) -> Filesystem:
    """The row or profile `name` names; a UsageError saying what is wrong with it."""
    try:
        return FILESYSTEMS[name]
    except KeyError:
        raise UsageError(f"unknown filesystem {shown(name)}; known: {', '.join(FILESYSTEMS)}, each with options "
                         f"(FS+OPTION, e.g. ext4+fast_commit: plugpull doctor lists them)") from None


@dataclass(frozen=True)
class Mode:
    """A barrier/write-cache mode (see the README's table of modes).

    `write_cache`: the cache the guest sees. `no_flushes`: the kernel is told to send no
    FLUSH/FUA although the cache is volatile (ext4's nobarrier; for filesystems without such
    an option, queue/write_cache = "write through"). `lying`: the disk acknowledges flushes
    and ignores them (the power-loss model ignores them; a throughput run does not pay for
    them). `external_log`: the journal lives on a second disk.
    """

    name: str
    write_cache: bool
    no_flushes: bool = False
    lying: bool = False
    external_log: bool = False
    summary: str = ""

    def mount_options(self, fs: Filesystem) -> list[str]:
        if self.no_flushes and fs.nobarrier_option:
            return [fs.nobarrier_option]
        return []

    def guest_setup(self, fs: Filesystem, disk: str) -> list[str]:
        if self.no_flushes and not fs.nobarrier_option:
            return [f'echo "write through" > /sys/block/{disk}/queue/write_cache']
        return []


MODES = {
    m.name: m
    for m in (
        Mode("barrier", True, summary="write cache on, flushes sent and honoured"),
        Mode("nobarrier", True, no_flushes=True, summary="write cache on, flushes never sent"),
        Mode("nocache", False, summary="write cache off: a completed write is durable"),
        Mode("lying", True, lying=True, summary="write cache on, flushes acknowledged and ignored"),
        Mode("extlog", True, external_log=True,
             summary="barriers on; the log on a second disk whose flushes cost nothing (seed 003's SSD)"),
    )
}


def mode(name: str) -> Mode:
    try:
        return MODES[name]
    except KeyError:
        raise UsageError(f"unknown mode {shown(name)}; known: {', '.join(MODES)}") from None


def check_profiles(names, kernel) -> None:
    """Every profile among the filesystems `names` checked against the kernel the guests will
    boot (`kernel`: a KernelSource, None for the host's), before any image is made."""
    from plugpull.guest.image.build import host_kernel

    profiles = [filesystem(n) for n in dict.fromkeys(names) if SEP in n]
    if not profiles:
        return
    kernel = kernel or host_kernel()
    config = dotconfig.read(dotconfig.beside(kernel.kernel, kernel.modules_dir))
    for fs in profiles:
        check_kernel(fs, kernel.release, config)
