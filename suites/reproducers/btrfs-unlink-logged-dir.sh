#!/bin/sh
# Reproducer: gen:seq3-735518077 on btrfs, writes dropped after point 3 (fsync-any A/bar).
# Workload: link B/bar A/bar, sync; unlink B/foo, fsync B; unlink B/bar, fsync-any A/bar
# Usage, as root: sh THIS_SCRIPT DEVICE
# EVERYTHING ON DEVICE IS ERASED: the script makes a new filesystem on it.
# Needs: dmsetup and the dm-flakey target, xfs_io, mkfs.btrfs, mount,
# and stat, readlink, md5sum, blockdev, mktemp.
# Method (fstests' dm-flakey): right after the point's persistence call every write is
# dropped, the filesystem is unmounted and mounted again: what the disk had then is
# what a power cut would have left.
# Checked: what the model oracle says a crash right after this point owes on btrfs, and nothing more
# (a name's kind, a file's size, md5, link count, a symlink's target; xattrs only where
# the workload sets some). A fact owed as one of several values accepts any of them.
# And a rename's atomicity: no two names are one inode unless a step made them so.
# Xattrs are not checked: no operation sets or removes one.
# Prints PASS or FAIL lines; exit 0 PASS, 1 FAIL, 2 bad usage or a missing tool,
# 3 a step before the check failed (no verdict).

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
for tool in dmsetup xfs_io mkfs.btrfs mount umount stat readlink md5sum cut grep blockdev mktemp; do
	command -v "$tool" >/dev/null 2>&1 || { echo "missing tool: $tool" >&2; exit 2; }
done
modprobe dm-flakey 2>/dev/null
if ! dmsetup targets | grep -q '^flakey'; then
	echo "missing: the dm-flakey target (CONFIG_DM_FLAKEY)" >&2; exit 2
fi

size=$(blockdev --getsz "$dev") || die "blockdev --getsz $dev failed"
live="0 $size flakey $dev 0 180 0"
drop="0 $size flakey $dev 0 0 180 1 drop_writes"
mkfs.btrfs -q -f "$dev" >/dev/null || die "mkfs failed"
dmsetup create "$name" --table "$live" || die "dmsetup create failed"
created=1
dmsetup mknodes "$name"  # without udev there is no /dev/mapper node otherwise
mnt=$(mktemp -d) || die "mktemp failed"
mount -t btrfs "/dev/mapper/$name" "$mnt" || die "mount failed"

# setup, made durable by sync (point 0)
mkdir "$mnt"/A || die "setup, made durable by sync (point 0): failed"
mkdir "$mnt"/B || die "setup, made durable by sync (point 0): failed"
xfs_io -f -c "pwrite -q -S 0x44 0 16384" "$mnt"/B/bar || die "setup, made durable by sync (point 0): failed"
xfs_io -f -c "pwrite -q -S 0x43 0 16384" "$mnt"/B/foo || die "setup, made durable by sync (point 0): failed"
sync || die "setup, made durable by sync (point 0): failed"
# 1: link B/bar A/bar
ln "$mnt"/B/bar "$mnt"/A/bar || die "1: link B/bar A/bar: failed"
# point 1: sync
sync || die "point 1: sync: failed"
# 2: unlink B/foo
rm -f "$mnt"/B/foo || die "2: unlink B/foo: failed"
# point 2: fsync B
xfs_io -c fsync "$mnt"/B || die "point 2: fsync B: failed"
# 3: unlink B/bar
rm -f "$mnt"/B/bar || die "3: unlink B/bar: failed"
# point 3: fsync-any A/bar
xfs_io -c fsync "$mnt"/A/bar || die "point 3: fsync-any A/bar: failed"

# the power cut: every write from here on is dropped
table "$drop" || die "could not load the drop_writes table"
umount "$mnt" || die "umount failed"
table "$live" || die "could not load the pass-through table"
if ! mount -t btrfs "/dev/mapper/$name" "$mnt"; then
	echo "FAIL: the recovery mount failed"; exit 1
fi

kind_of() {  # the kind of PATH: absent, file, dir, symlink or other
	if [ -L "$mnt/$1" ]; then echo symlink
	elif [ -f "$mnt/$1" ]; then echo file
	elif [ -d "$mnt/$1" ]; then echo dir
	elif [ -e "$mnt/$1" ]; then echo other
	else echo absent
	fi
}

fact_of() {  # fact_of PATH FACT: size, nlink, md5 (of the contents), target or xattr (user.pp's value)
	case $2 in
	size) stat -c %s "$mnt/$1" ;;
	nlink) stat -c %h "$mnt/$1" ;;
	md5) md5sum <"$mnt/$1" | cut -d' ' -f1 ;;
	target) readlink "$mnt/$1" ;;
	xattr) getfattr --only-values -n user.pp "$mnt/$1" 2>/dev/null ;;
	esac
}

either() {  # the words given, joined by "or" ("none" for an empty one)
	e_out=
	for e_word in "$@"; do e_out="${e_out:+$e_out or }${e_word:-none}"; done
	echo "$e_out"
}

wrong() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

check() {  # check PATH FACT NEED WHY ALLOWED...: FACT of PATH is one of ALLOWED (judged where PATH is a NEED)
	c_path=$1 c_fact=$2 c_need=$3 c_why=$4
	shift 4
	if [ "$c_fact" = kind ]; then
		c_value=$(kind_of "$c_path")
	elif [ "$(kind_of "$c_path")" != "$c_need" ]; then
		return 0
	else
		c_value=$(fact_of "$c_path" "$c_fact")
	fi
	for c_ok in "$@"; do
		if [ "$c_value" = "$c_ok" ]; then return 0; fi
	done
	wrong "$c_path: $c_fact is ${c_value:-none}, owed $(either "$@") ($c_why)"
}

held() {  # held KIND MD5 WHY NAME...: one of the NAMEs is a KIND (with contents MD5, unless -)
	h_kind=$1 h_md5=$2 h_why=$3
	shift 3
	for h_name in "$@"; do
		if [ "$(kind_of "$h_name")" = "$h_kind" ]; then
			if [ "$h_md5" = - ] || [ "$(fact_of "$h_name" md5)" = "$h_md5" ]; then return 0; fi
		fi
	done
	wrong "the $h_kind owed at $1 is under none of $* ($h_why)"
}

apart() {  # apart NAME NAME: the two, where both are there, are not one inode
	case "$(kind_of "$1") $(kind_of "$2")" in *absent*|*dir*) return 0 ;; esac
	if [ "$(stat -c %i "$mnt/$1")" = "$(stat -c %i "$mnt/$2")" ]; then
		wrong "$1 and $2 are one inode (link count $(stat -c %h "$mnt/$1")), which no step of the workload makes them"
	fi
}

# what the point owes
check A kind - 'sync-all, point 1' dir
check B kind - 'sync-all, point 1' dir
check A/foo kind - 'sync-all, point 1' absent
check A/bar kind - 'fsync-names, point 3' file
check A/bar size file 'fsync-data, point 3' 16384
check A/bar md5 file 'fsync-data, point 3' df2d9094b8b558a6c6fe5fe7f2a4b1d8
check A/bar nlink file 'fsync-nlink, point 3' 1
check B/foo kind - 'fsync-dir-entries, point 2' absent
check B/foo nlink file 'sync-all, point 1' 1
check B/bar kind - 'fsync-names, point 3' absent
check B/bar nlink file 'sync-all, point 1' 2
held file df2d9094b8b558a6c6fe5fe7f2a4b1d8 'fsync-dir-entries, point 2' A/bar B/bar
apart A/bar B/foo
apart B/bar B/foo

if [ "$failed" -gt 0 ]; then
	echo "FAIL: $failed owed fact(s) wrong after a crash right after point 3 of gen:seq3-735518077 on btrfs"
	exit 1
fi
echo PASS
exit 0
