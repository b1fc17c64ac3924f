#!/bin/sh
# Reproducer: gen:seq1-000051 on f2fs-strict, the cache flushes of point 1 (fdatasync B/foo).
# Workload: write.overwrite B/foo, fdatasync B/foo
# Usage, as root: sh THIS_SCRIPT DEVICE
# EVERYTHING ON DEVICE IS ERASED: the script makes a new filesystem on it.
# Needs: xfs_io, mkfs.f2fs, mount, a device with a volatile write cache.
# Method: the device's count of completed cache flushes (/sys/block/DISK/stat, field 16),
# read before the point's persistence call and after it returned. A call that makes
# written data durable on such a device must flush its cache: no flush is a FAIL.
# Prints PASS or FAIL; exit 0 PASS, 1 FAIL, 2 bad usage, a missing tool or a device
# without a write cache, 3 a step failed (no verdict).

set -u
name=plugpull-repro-$$
mnt=
created=
delayed=
failed=0

remove() {  # a dm device, and its /dev/mapper node (without udev nothing else drops it)
	dmsetup resume "$1" 2>/dev/null
	dmsetup remove --retry "$1"
	dmsetup mknodes "$1" 2>/dev/null
}

cleanup() {
	cd /
	if [ -n "$mnt" ]; then
		if grep -q " $mnt " /proc/mounts; then umount "$mnt"; fi
		rmdir "$mnt"
	fi
	if [ -n "$delayed" ]; then remove "$name-delay"; fi
	if [ -n "$created" ]; then remove "$name"; fi
}
trap cleanup EXIT
trap 'exit 3' HUP INT TERM

die() {  # a step before the check failed: no verdict
	echo "ERROR: $*" >&2
	exit 3
}

table() {  # load dm table $1 into the flakey device, the filesystem left unfrozen (as fstests does)
	dmsetup suspend --nolockfs "$name" && dmsetup load "$name" --table "$1" && dmsetup resume "$name"
}

if [ $# -ne 1 ] || [ ! -b "$1" ]; then
	echo "usage: sh $0 DEVICE (a block device; everything on it is erased)" >&2
	exit 2
fi
dev=$1
if [ "$(id -u)" != 0 ]; then echo "run as root (mkfs, mount)" >&2; exit 2; fi
for tool in xfs_io mkfs.f2fs mount umount stat readlink md5sum cut grep blockdev mktemp; do
	command -v "$tool" >/dev/null 2>&1 || { echo "missing tool: $tool" >&2; exit 2; }
done

disk_dir() {  # the sysfs directory of DEVICE's whole disk (flushes count on the disk, not a partition)
	d_name=$(basename "$(readlink -f "$1")")
	d_sys=$(readlink -f "/sys/class/block/$d_name")
	if [ -e "$d_sys/partition" ]; then d_sys=$(dirname "$d_sys"); fi
	echo "$d_sys"
}

flushes() {  # flush requests the device completed (field 16 of its stat)
	set -- $(cat "$sys/stat")
	[ $# -ge 16 ] || return 1
	shift 15
	echo "$1"
}

sys=$(disk_dir "$dev")
if [ "$(cat "$sys/queue/write_cache" 2>/dev/null)" != "write back" ]; then
	echo "$dev has no volatile write cache (queue/write_cache): no flush is owed on it" >&2; exit 2
fi
flushes >/dev/null || { echo "$sys/stat counts no flushes (Linux 5.5 on)" >&2; exit 2; }
mkfs.f2fs -q -f "$dev" >/dev/null || die "mkfs failed"
mnt=$(mktemp -d) || die "mktemp failed"
mount -t f2fs -o fsync_mode=strict "$dev" "$mnt" || die "mount failed"

# setup, made durable by sync (point 0)
mkdir "$mnt"/B || die "setup, made durable by sync (point 0): failed"
xfs_io -f -c "pwrite -q -S 0x43 0 16384" "$mnt"/B/foo || die "setup, made durable by sync (point 0): failed"
sync || die "setup, made durable by sync (point 0): failed"
# 1: write.overwrite B/foo
xfs_io -c "pwrite -q -S 0x61 0 4096" "$mnt"/B/foo || die "1: write.overwrite B/foo: failed"
# point 1: fdatasync B/foo
before=$(flushes) || die "could not read the flush count"
xfs_io -c fdatasync "$mnt"/B/foo || die "point 1: fdatasync B/foo: failed"
after=$(flushes) || die "could not read the flush count"
umount "$mnt" || die "umount failed"

if [ "$after" = "$before" ]; then
	echo "FAIL: fdatasync B/foo returned and no cache flush reached $dev while it ran: what it wrote may be in the disk's volatile cache only"
	exit 1
fi
echo "PASS"
exit 0
