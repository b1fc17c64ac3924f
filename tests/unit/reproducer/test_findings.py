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
