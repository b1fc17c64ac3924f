"""What the project knows of its findings beyond a workload: the kernel commit that fixed one
(an fstests test names it with `_fixed_by_kernel_commit`), and the report written for it."""

from dataclasses import dataclass

from plugpull.testbed.fs import FILESYSTEMS


@dataclass(frozen=True)
class Fix:
    commit: str  # 12 hex digits, as fstests spells a commit
    title: str


FIXES = {  # (gen:ID, filesystem) -> the commit that fixed it upstream
    ("gen:seq2-080435", "btrfs"): Fix("953902e4fb4c",
                                      "btrfs: set inode flag BTRFS_INODE_COPY_EVERYTHING when logging new name"),
}


def fix_lines(case) -> list[str]:
    """The fstests line naming the fix of `case`'s finding, if one is known."""
    fix = FIXES.get((case.ident, case.fs))
    if fix is None:
        return []
    fstyp = FILESYSTEMS[case.fs].mount_type
    return [f'[ "$FSTYP" = "{fstyp}" ] && _fixed_by_kernel_commit {fix.commit} \\', f'\t"{fix.title}"']
