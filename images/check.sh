#!/bin/sh
# pp-check FS DEV SUBDIR COLLECT [LOGDEV]: check one crash state (LOGDEV: its external log). Recovery mount; what the host's
# oracle needs from SUBDIR (COLLECT: tar = contents in /tmp/check.tar, sums = sha256 per file
# in /tmp/check.sums, script = the user's /tmp/user-check.sh run in SUBDIR with the owed ack
# IDs in /tmp/user-check.ids, its output in /tmp/check.script, none); unmount; read-only fsck. Prints key=value lines; the evidence
# (mount error, fsck output, kernel log) stays in /tmp/check.* for the host.
fs=$1 dev=$2 sub=$3 collect=${4:-tar} logdev=$5
mount_opt= repair_opt=
if [ -n "$logdev" ]; then mount_opt="-o logdev=$logdev" repair_opt="-l $logdev"; fi
mnt=/mnt/check
mkdir -p $mnt
rm -f /tmp/check.*
dmesg -c >/dev/null
if mount -t "$fs" $mount_opt "$dev" $mnt 2>/tmp/check.mount; then
    echo mount_rc=0
    if [ "$collect" = none ]; then
        echo collect_rc=skipped
    elif [ ! -d "$mnt/$sub" ]; then
        echo collect_rc=absent
    elif [ "$collect" = sums ]; then
        (cd $mnt && find "$sub" -type f | sort | xargs -r sha256sum) >/tmp/check.sums 2>/tmp/check.collecterr
        echo collect_rc=$?
    elif [ "$collect" = script ]; then
        # timeout's watcher (a busybox child) and anything the script left behind must not
        # keep the mount busy: the watcher starts in /, stragglers in the mount are killed.
        (cd / && export PP_MNT=$mnt PP_DIR="$mnt/$sub" PP_REQUIRED=/tmp/user-check.ids \
            PP_REQUIRED_IDS="$(echo $(cat /tmp/user-check.ids))" && \
            timeout -s KILL 120 sh -c 'cd "$PP_DIR" && exec sh /tmp/user-check.sh') \
            </dev/null >/tmp/check.script 2>/tmp/check.collecterr
        echo collect_rc=$?
        for p in /proc/[0-9]*; do
            case "$(readlink $p/cwd)" in "$mnt"|"$mnt"/*) kill -9 ${p#/proc/} 2>/dev/null ;; esac
        done
    else
        tar -cf /tmp/check.tar -C $mnt "$sub" 2>/tmp/check.collecterr
        echo collect_rc=$?
    fi
    umount $mnt 2>>/tmp/check.mount
    echo umount_rc=$?
else
    echo mount_rc=$?
fi
case "$fs" in
    xfs) xfs_repair -n $repair_opt "$dev" >/tmp/check.fsck 2>&1 ;;
    ext4|ext3|ext2) e2fsck -fn "$dev" >/tmp/check.fsck 2>&1 ;;
    btrfs) btrfs check --readonly "$dev" >/tmp/check.fsck 2>&1 ;;
    *) echo "unknown filesystem $fs" >/tmp/check.fsck; false ;;
esac
echo fsck_rc=$?
dmesg -c >/tmp/check.dmesg
