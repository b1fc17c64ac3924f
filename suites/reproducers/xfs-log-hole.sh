#!/bin/sh
# Reproducer: XFS log recovery fails on a log record 4096 blocks past a hole (plugpull's XFS finding).
# Usage, as root: sh THIS_SCRIPT DEVICE (300 MiB at least)
# EVERYTHING ON DEVICE IS ERASED: the script makes a new filesystem on it, twice.
# Needs: mkfs.xfs, xfs_db, mount, dd, printf, sed.
# Method: a fresh XFS whose log holds one record of cycle 1 (an uncommitted 32 KiB iclog,
# its CRC wrong) and only zeroed blocks back to the head, as a disk cache that kept a late
# iclog and lost an earlier one leaves it. At the head (the control) recovery discards it
# as a torn write and mounts; 4036 blocks further it must do the same. States of this
# kind arise since eef983ffeae7 ("xfs: journal IO cache flush reductions", Linux 5.14).
# Prints PASS or FAIL; exit 0 PASS, 1 FAIL, 2 bad usage or a missing tool, 3 a step failed.

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
for tool in mkfs.xfs xfs_db mount umount dd sed mktemp; do
	command -v "$tool" >/dev/null 2>&1 || { echo "missing tool: $tool" >&2; exit 2; }
done

be32() {  # $1 as 4 bytes, big-endian
	printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)))"
}

zeros() {
	dd if=/dev/zero bs="$1" count=1 2>/dev/null
}

record() {  # record BLOCK: a log record header of cycle 1 (CRC 0: wrong) at BLOCK, then its 63 data blocks
	be32 4276992702; be32 1; be32 2; be32 32256  # XLOG_HEADER_MAGIC_NUM, cycle, version 2, h_len
	be32 1; be32 "$1"; be32 1; be32 2  # h_lsn 1:BLOCK, h_tail_lsn 1:2
	be32 0; be32 2; be32 0  # h_crc, h_prev_block, h_num_logops
	zeros 468
	r_i=0
	while [ $r_i -lt 63 ]; do be32 1; zeros 508; r_i=$((r_i + 1)); done  # each block starts with its cycle
}

crafted() {  # crafted BLOCK: a fresh XFS on $dev with one record at log block BLOCK
	mkfs.xfs -q -f "$dev" >/dev/null || die "mkfs.xfs failed"
	sb=$(xfs_db -r -c "sb 0" -c "p logstart agblklog agblocks blocksize logblocks" "$dev") || die "xfs_db failed"
	field() { echo "$sb" | sed -n "s/^$1 = //p"; }
	logstart=$(field logstart) agblklog=$(field agblklog) agblocks=$(field agblocks) bsize=$(field blocksize)
	logblocks=$(field logblocks)
	[ -n "$logstart" ] && [ "$logstart" -gt 0 ] || die "no internal log (logstart ${logstart:-unknown})"
	log=$(( ((logstart >> agblklog) * agblocks + (logstart & ((1 << agblklog) - 1))) * bsize / 512 ))
	log_bb=$((logblocks * bsize / 512))
	[ "$log_bb" -gt 4102 ] || die "the log is too small: $log_bb blocks"
	record "$1" | dd of="$dev" bs=512 seek=$((log + $1)) conv=notrunc,fsync 2>/dev/null || die "dd failed"
}

mnt=$(mktemp -d) || die "mktemp failed"
crafted 2
mount -t xfs "$dev" "$mnt" || die "the control (a torn record at the log's head) did not mount"
umount "$mnt" || die "umount failed"
crafted 4038
if ! mount -t xfs "$dev" "$mnt" 2>/dev/null; then
	echo "FAIL: XFS log recovery failed on a log whose only record lies 4036 blocks past a hole (ending 4096 blocks past it), where a record at the head is discarded"
	exit 1
fi
umount "$mnt" || die "umount failed"
echo "PASS"
exit 0
