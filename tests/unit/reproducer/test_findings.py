"""A finding's known fix (reproducer/findings): the fstests line that names it, for the
filesystem it was found on and for every profile of that filesystem."""

import pytest

from plugpull.reproducer import case_for
from plugpull.reproducer.findings import fix_lines

FIXED = "gen:seq2-080435"  # btrfs's, fixed by 953902e4fb4c


@pytest.mark.parametrize("fs", ["btrfs", "btrfs+compress=zstd", "btrfs+compress=zstd+nodatacow"])
def test_a_profile_of_the_filesystem_names_its_fix(fs):
    lines = fix_lines(case_for(FIXED, fs))
    assert lines[0] == '[ "$FSTYP" = "btrfs" ] && _fixed_by_kernel_commit 953902e4fb4c \\', lines


@pytest.mark.parametrize("ident, fs", [(FIXED, "ext4"), (FIXED, "ext4+fast_commit"), ("gen:seq2-056383", "btrfs"),
                                       ("gen:seq2-056383", "btrfs+compress=zstd")])
def test_another_filesystem_or_finding_names_none(ident, fs):
    assert fix_lines(case_for(ident, fs)) == []


def test_the_fstests_numbers_are_derived_from_the_live_findings():
    """findings.LIVE states each live finding once; the numbers its test takes in an fstests
    tree follow from it: numbered anew from 900 in tests/generic/ (the log hole's in tests/xfs/)."""
    from plugpull.reproducer.findings import LIVE, Live, tree_numbers
    from plugpull.reproducer.fstests_root import EXPORTS
    assert EXPORTS == tree_numbers(LIVE) == {"btrfs/900": "generic/900", "btrfs/901": "generic/901",
                                             "btrfs/902": "generic/902", "f2fs/900": "generic/903",
                                             "f2fs/901": "generic/904", "xfs/900": "xfs/900"}
    more = tree_numbers((*LIVE, Live("ext4-new", "gen:seq1-000001", "ext4", "flakey", "900", "new-report.md")))
    assert more["ext4/900"] == "generic/903" and more["f2fs/901"] == "generic/905" and more["xfs/900"] == "xfs/900"


def test_no_live_finding_has_a_known_fix():
    """A finding with a fix upstream is not live: the two tables never name the same one."""
    from plugpull.reproducer.findings import FIXES, LIVE
    assert not {(f.target, f.fs) for f in LIVE} & set(FIXES)
