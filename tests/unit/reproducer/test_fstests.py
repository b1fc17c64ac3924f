"""The fstests form against a real fstests tree the developer points at
(`PLUGPULL_FSTESTS=DIR`, e.g. `make test-all PLUGPULL_FSTESTS=~/xfstests-dev`): every helper
the stand-in of tests/data/fstests-shim defines is one the tree defines, and every helper an
exported test calls is defined there, on the plain filesystems and on feature profiles (their
guards: `_require_scratch_ext4_feature`, ...). On a tree from before eb2ad950 (2025-12-18) the tests
take the branch that calls `_mount_flakey`, which such a tree defines. Nothing is run in a
guest here: the tree is only read."""

import os
from pathlib import Path

import pytest

from tests.unit.reproducer.test_reproducer import FINDINGS, SHIM, every_fstests_form, helpers_called, helpers_defined

TREE = os.environ.get("PLUGPULL_FSTESTS", "")


@pytest.fixture(scope="module")
def tree_helpers() -> set[str]:
    if not TREE:
        pytest.skip("PLUGPULL_FSTESTS=DIR (a real fstests tree) is not set")
    common = Path(TREE) / "common"
    if not (common / "dmflakey").is_file():
        pytest.fail(f"PLUGPULL_FSTESTS={TREE}: not an fstests tree (no common/dmflakey)")
    return helpers_defined(common)


def is_today(helpers: set[str]) -> bool:
    return "_mount_flakey" not in helpers


def test_the_stand_in_defines_only_helpers_of_the_tree(tree_helpers):
    assert helpers_defined(SHIM / "common") - tree_helpers == set()


@pytest.mark.parametrize("fs", ["btrfs", "ext4", "xfs", "f2fs-strict", "ext4+fast_commit", "ext4+inline_data",
                                "btrfs+compress=zstd", "f2fs+compress"])
@pytest.mark.parametrize("ident", FINDINGS)
def test_an_exported_test_calls_only_helpers_of_the_tree(tree_helpers, ident, fs):
    if not is_today(tree_helpers):
        assert {"_mount_flakey", "_unmount_flakey"} <= tree_helpers
    for text in every_fstests_form(ident, fs):
        assert helpers_called(text) - tree_helpers == set()
