"""The exported fstests tests run by real fstests' `./check`, in a guest on the kernel under
test (`--kernel`, the host's by default), from a Debian 12 root with the fstests tree the
developer points at (`PLUGPULL_FSTESTS=DIR`, `make test-all PLUGPULL_FSTESTS=DIR`) built in it
(plugpull/reproducer/fstests_root.py; cached, minutes the first time).

Each finding's test FAILs on its filesystem with the finding's line in the diff against its
golden output; the workloads' tests PASS on ext4. A test fstests did not run (a `_require_*`
guard) fails here with the guard's reason: the harness could not show anything."""

import os
import time

import pytest

from plugpull.reproducer.fstests_guest import fstests_guest
from plugpull.reproducer.fstests_root import fstests_root

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.timeout(3600)]

TREE = os.environ.get("PLUGPULL_FSTESTS", "")
FAILS = {  # (test, FSTYP): a line its output has where the golden output has another
    ("generic/900", "btrfs"): "+A/bar nlink (if a file): 2, owed 1 (sync-all, point 0)",
    ("generic/901", "btrfs"): "+the file owed at A/foo: under none of A/foo B/bar (sync-all, point 0)",
    ("generic/902", "btrfs"): "+A/bar nlink (if a file): 2, owed 1 (fsync-nlink, point 3)",
    ("generic/903", "f2fs"): "+B/foo size (if a file): 16384, owed 20480 (fsync-data, point 1)",
    ("generic/904", "f2fs"): "+a cache flush while fdatasync B/foo ran: none",
    ("xfs/900", "xfs"): "+a record 4036 blocks past a hole: log recovery failed",
}
# The workloads on ext4. generic/904 mounts with f2fs's fsync_mode=strict: f2fs only.
PASSES = [("generic/900", "ext4"), ("generic/901", "ext4"), ("generic/902", "ext4"), ("generic/903", "ext4")]


@pytest.fixture(scope="module")
def root_image():
    if not TREE:
        pytest.skip("PLUGPULL_FSTESTS=DIR (a real fstests tree) is not set")
    start = time.monotonic()
    image = fstests_root(TREE)
    print(f"\nfstests root: {image} in {time.monotonic() - start:.0f} s")
    return image


@pytest.fixture(scope="module")
def guest(rig, root_image):
    start = time.monotonic()
    with fstests_guest(rig, root_image) as g:
        print(f"\nfstests guest on {rig.image.kernel_release} up, root mounted, in {time.monotonic() - start:.0f} s")
        yield g


def checked(guest, test, fstyp):
    result = guest.check(test, fstyp)
    print(f"\n./check {test} on {fstyp}: {result.status} in {result.seconds:.0f} s\n{result.reason}")
    if result.status == "notrun":
        pytest.fail(f"{test} on {fstyp} was not run: {result.reason}")
    return result


@pytest.mark.parametrize(("test", "fstyp"), list(FAILS), ids=lambda v: v.replace("/", "-"))
def test_a_finding_fails_in_real_fstests(guest, test, fstyp):
    result = checked(guest, test, fstyp)
    assert result.status == "fail", result.output
    assert FAILS[test, fstyp] in result.diff_lines, result.reason


@pytest.mark.parametrize(("test", "fstyp"), PASSES, ids=lambda v: v.replace("/", "-"))
def test_the_workload_passes_on_ext4(guest, test, fstyp):
    result = checked(guest, test, fstyp)
    assert result.status == "pass", f"{result.reason}\n{result.output}"
