"""What the project knows of its findings beyond a workload: the kernel commit that fixed one
(an fstests test names it with `_fixed_by_kernel_commit`), and the report written for it."""

from dataclasses import dataclass

from plugpull.testbed.features import split
from plugpull.testbed.fs import FILESYSTEMS


@dataclass(frozen=True)
class Fix:
    commit: str  # 12 hex digits, as fstests spells a commit
    title: str


FIXES = {  # (gen:ID, filesystem) -> the commit that fixed it upstream, on every profile of that filesystem
    ("gen:seq2-080435", "btrfs"): Fix("953902e4fb4c",
                                      "btrfs: set inode flag BTRFS_INODE_COPY_EVERYTHING when logging new name"),
}


def fix_lines(case) -> list[str]:
    """The fstests line naming the fix of `case`'s finding, if one is known: a profile's
    (`btrfs+compress=zstd`) is its filesystem's, whose code the fix is in."""
    fix = FIXES.get((case.ident, split(case.fs)[0]))
    if fix is None:
        return []
    fstyp = FILESYSTEMS[case.fs].mount_type
    return [f'[ "$FSTYP" = "{fstyp}" ] && _fixed_by_kernel_commit {fix.commit} \\', f'\t"{fix.title}"']


@dataclass(frozen=True)
class Live:
    """A finding that still shows on today's kernels, its reproducer in suites/reproducers/:
    `target` as `plugpull reproducer` takes it, in `form`, its fstests test numbered `number`
    under fstests/`fs`/, the report that names it."""

    name: str
    target: str
    fs: str  # the filesystem (the reproducer's --fs), "" for a case file
    form: str
    number: str
    report: str  # under docs/findings/

    def command(self) -> str:
        fs = f" --fs {self.fs}" if self.fs else ""
        return f"plugpull reproducer {self.target}{fs} --form {self.form}"

    @property
    def fstests_dir(self) -> str:
        return FILESYSTEMS[self.fs].mount_type if self.fs else "xfs"

    @property
    def tree_dir(self) -> str:
        """The tests/ directory of an fstests tree its test goes in: xfs/ for the log hole's (it
        reads XFS's superblock with xfs_db), generic/ for the others (each needs only what it
        requires)."""
        return "xfs" if self.form == "log-hole" else "generic"


LIVE = (
    Live("f2fs-first-fsync", "gen:seq1-000372", "f2fs", "delay", "900", "f2fs-first-fsync-report.md"),
    Live("f2fs-strict-fdatasync", "gen:seq1-000051", "f2fs-strict", "flushes", "901", "f2fs-first-fsync-report.md"),
    Live("btrfs-rename-both-names", "gen:seq1-000253", "btrfs", "flakey", "900",
         "btrfs-rename-both-names-report.md"),
    Live("btrfs-link-unlink", "gen:seq2-056383", "btrfs", "flakey", "901", "btrfs-link-unlink-report.md"),
    Live("btrfs-unlink-logged-dir", "gen:seq3-735518077", "btrfs", "flakey", "902",
         "btrfs-unlink-logged-dir-report.md"),
    Live("xfs-log-hole", "suites/cases/finding-xfs-log-hole.toml", "", "log-hole", "900", "xfs-log-hole-report.md"),
)


def tree_numbers(live: tuple[Live, ...] = LIVE) -> dict[str, str]:
    """Each live finding's fstests test, suites/reproducers/fstests/FS/NNN, as an fstests tree
    gets it: tests/DIR/NNN, numbered anew from 900 in each DIR in the order of their sources."""
    out, taken = {}, {}
    for source, tree_dir in sorted((f"{f.fstests_dir}/{f.number}", f.tree_dir) for f in live):
        taken[tree_dir] = taken.get(tree_dir, 899) + 1
        out[source] = f"{tree_dir}/{taken[tree_dir]}"
    return out
