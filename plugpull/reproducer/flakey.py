"""The `flakey` form: fstests' dm-flakey method. The filesystem sits on a dm-flakey device;
right after the point's persistence call every write is dropped (a `drop_writes` table loaded
with `--nolockfs`), the filesystem is unmounted and mounted again: what the disk had then is
what a power cut would have left. What it adds in each style (`FLAKEY`); the script and the
test around it are `sh`'s and `fstests`'."""

from functools import partial

from plugpull.reproducer import fstests, sh
from plugpull.reproducer.shell import Drop

FLAKEY_MOUNT = r"""# fstests since eb2ad950 (2025-12-18): _init_flakey points SCRATCH_DEV at the flakey device
# and _scratch_mount mounts it. Before, SCRATCH_DEV stayed the disk and _mount_flakey mounted
# the flakey device (without stopping the test when it failed).
mount_flakey()
{
	if [ -n "$NON_FLAKEY_DEV" ]; then
		_scratch_mount
	else
		_mount_flakey || _fail "mounting the flakey device failed"
	fi
}

unmount_flakey()
{
	if [ -n "$NON_FLAKEY_DEV" ]; then
		_scratch_unmount
	else
		_unmount_flakey
	fi
}
"""

FLAKEY = Drop(
    targets=("flakey",),
    sh_method=("# Method (fstests' dm-flakey): right after the point's persistence call every write is",
               "# dropped, the filesystem is unmounted and mounted again: what the disk had then is",
               "# what a power cut would have left."),
    fstests_method=("# Right after the persistence call, writes are dropped (dm-flakey) and the filesystem is",
                    "# remounted: what it shows must be what the persistence calls made durable."),
    fstests_cleanup=("_cleanup_flakey",),
    fstests_helpers=FLAKEY_MOUNT,
    fstests_stack=("_init_flakey", "mount_flakey"),
    fstests_crash=("# Drop every write from here on (a power cut), unmount, mount again.", "_flakey_drop_and_remount",
                   'grep -q " $SCRATCH_MNT " /proc/mounts || _fail "the recovery mount failed"'),
    fstests_unmount="unmount_flakey",
)

# The form in each style: script(case), fstests_test(case, number) and its golden(case, number),
# which does not depend on the form.
script, fstests_test, golden = partial(sh.script, drop=FLAKEY), partial(fstests.test, drop=FLAKEY), fstests.golden
