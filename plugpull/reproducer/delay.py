"""The `delay` form: a dm-delay device above the flakey one and the filesystem on it. Writes
wait DELAY_MS there, reads and flushes do not. A write the persistence call did not wait for
is still held in it when the call returns, and the drop loses it every time; a call that
waits for its writes takes longer instead and keeps them. A drop that comes DELAY_MS or more
after the call returned (a slow machine) gives no verdict (`shell.late_drop`). What it adds
in each style (`DELAY`); the script and the test around it are `sh`'s and `fstests`'."""

from functools import partial

from plugpull.reproducer import fstests, sh
from plugpull.reproducer.shell import DELAY_MS, EXIT_NO_VERDICT, Drop, late_drop

LOWER = "/dev/mapper/$name"

HOLD_WRITES = r"""# Writes held %d ms in the delay device, reads and flushes not (dm-delay's third group): a
# write the persistence call did not wait for is still held when it returns.
hold_writes()
{
	local size=$(blockdev --getsz $SCRATCH_DEV)
	local table="0 $size delay $SCRATCH_DEV 0 0 $SCRATCH_DEV 0 %d $SCRATCH_DEV 0 0"

	$DMSETUP_PROG suspend --nolockfs $DELAY_NAME && $DMSETUP_PROG load $DELAY_NAME --table "$table" && \
		$DMSETUP_PROG resume $DELAY_NAME || _fail "could not load the write delay"
}
""" % (DELAY_MS, DELAY_MS)

TOO_LATE = ('dmsetup resume "$name"; '
            f'echo "no verdict: the writes were dropped $late ms after the call returned, not within the '
            f'{DELAY_MS} ms they are held (a slow or loaded machine)" >&2; exit {EXIT_NO_VERDICT}')

DELAY = Drop(
    targets=("flakey", "delay"),
    sh_method=(f"# Method: the filesystem sits on dm-delay (writes held {DELAY_MS} ms, reads and flushes not) above",
               "# dm-flakey. Right after the point's persistence call every write is dropped: a write",
               "# the call did not wait for is still held then and is lost, as a disk cache may lose a",
               "# write no flush covered. The filesystem is unmounted and mounted again (recovery)."),
    sh_device=(f'held="0 $size delay {LOWER} 0 0 {LOWER} 0 {DELAY_MS} {LOWER} 0 0"',
               'dmsetup create "$name-delay" --table "$held" || die "dmsetup create (dm-delay) failed"',
               "delayed=1",
               'dmsetup mknodes "$name-delay"'),
    sh_top='"/dev/mapper/$name-delay"',
    sh_cut=", and those still held",
    sh_drop=("read -r returned _ </proc/uptime",
             'dmsetup suspend --nolockfs "$name" || die "could not suspend the flakey device"',
             *late_drop(TOO_LATE),
             "# the writes let through from here on wait for the resume, and meet the drop table",
             'dmsetup load "$name" --table "$drop" && dmsetup resume "$name" || '
             'die "could not load the drop_writes table"'),
    sh_unstack=('remove "$name-delay" || die "could not remove the dm-delay device"', "delayed="),
    fstests_method=(f"# The filesystem sits on dm-delay (writes held {DELAY_MS} ms, reads and flushes not) above",
                    "# dm-flakey. Right after the persistence call, writes are dropped, those still held",
                    "# too, and the filesystem is remounted: what it shows must be what the persistence",
                    "# calls made durable, which a write they did not wait for is not."),
    fstests_cleanup=("_cleanup_delay", "_cleanup_flakey"),
    fstests_common=(". ./common/dmdelay",),
    fstests_helpers=HOLD_WRITES,
    fstests_stack=("_init_flakey",
                   "# fstests before eb2ad950 (2025-12-18) left SCRATCH_DEV the disk: the delay goes above the "
                   "flakey device",
                   '[ -n "$NON_FLAKEY_DEV" ] || SCRATCH_DEV=$FLAKEY_DEV', "_init_delay", "hold_writes",
                   '_mount_delay || _fail "mounting the delay device failed"'),
    fstests_crash=("# Drop every write from here on and those still held (a power cut), unmount, mount again.",
                   "read -r returned _ </proc/uptime", "_load_flakey_table $FLAKEY_DROP_WRITES",
                   *late_drop(f'_notrun "writes dropped $late ms after the call returned, not within the {DELAY_MS} '
                              f'ms they are held: this machine is too slow to show it"'),
                   "_unmount_delay", "_load_flakey_table $FLAKEY_ALLOW_WRITES",
                   "_load_delay_table $DELAY_NONE", '_mount_delay || _fail "the recovery mount failed"'),
    fstests_unmount="_unmount_delay",
)

# The form in each style: script(case), fstests_test(case, number) and its golden(case, number),
# which does not depend on the form.
script, fstests_test, golden = partial(sh.script, drop=DELAY), partial(fstests.test, drop=DELAY), fstests.golden
