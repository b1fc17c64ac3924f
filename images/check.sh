#!/bin/sh
# pp-check FS DEV SUBDIR COLLECT [LOGDEV]: check one crash state (LOGDEV: its external log). Recovery mount; what the host's
# oracle needs from SUBDIR (COLLECT: tar = contents in /tmp/check.tar, sums = sha256 per file
# in /tmp/check.sums, tree = pp-tree's walk of SUBDIR in /tmp/check.tar, then new names made (pp-tree --after), script = the user's /tmp/user-check.sh run in SUBDIR with the owed ack
# IDs in /tmp/user-check.ids, its output in /tmp/check.script, none); unmount; read-only fsck. Prints key=value lines; the evidence
# (mount error, fsck output, kernel log) stays in /tmp/check.* for the host.
#
# pp-check --many [--no-fsck] FS SUBDIR COLLECT LUN...: the same check of several states, one a disk at
# each LUN of the virtio-scsi controller (tar, sums, tree or none); --no-fsck leaves the fsck (and its
# fsck_rc line) to the host, which reads the unmounted state through QEMU. Waits until every disk can be
# opened, then checks them in turn with as few processes as it can: state N's key=value lines
# and evidence go to /tmp/pp-many.N.{keys,fsck,mount,dmesg,blob}. Prints `wc -c` of those
# files (N = 1.., in that order), a line `---data`, then their contents. A disk that does
# not show up: `disk_missing=LUN` and nothing checked.
mnt=/mnt/check

check() {
    mount_opt= repair_opt=
    if [ -n "$logdev" ]; then mount_opt="-o logdev=$logdev" repair_opt="-l $logdev"; fi
    if mount -t "$fs" $mount_opt "$dev" $mnt 2>$out.mount; then
        echo mount_rc=0
        if [ "$collect" = none ]; then
            echo collect_rc=skipped
        elif [ ! -d "$mnt/$sub" ]; then
            echo collect_rc=absent
        elif [ "$collect" = sums ]; then
            (cd $mnt && find "$sub" -type f | sort | xargs -r sha256sum) >$blob 2>$out.collecterr
            echo collect_rc=$?
        elif [ "$collect" = tree ]; then
            # the walk, then the step after recovery (pp-tree's --after), its create_rc on descriptor 3
            pp-tree -C "$mnt/$sub" --after $mnt 3>&1 >$blob 2>$out.collecterr
            echo collect_rc=$?
        elif [ "$collect" = script ]; then
            # timeout's watcher (a busybox child) and anything the script left behind must not
            # keep the mount busy: the watcher starts in /, stragglers in the mount are killed.
            (cd / && export PP_MNT=$mnt PP_DIR="$mnt/$sub" PP_REQUIRED=/tmp/user-check.ids \
                PP_REQUIRED_IDS="$(echo $(cat /tmp/user-check.ids))" && \
                timeout -s KILL 120 sh -c 'cd "$PP_DIR" && exec sh /tmp/user-check.sh') \
                </dev/null >$out.script 2>$out.collecterr
            echo collect_rc=$?
            for p in /proc/[0-9]*; do
                case "$(readlink $p/cwd)" in "$mnt"|"$mnt"/*) kill -9 ${p#/proc/} 2>/dev/null ;; esac
            done
        else
            tar -cf $blob -C $mnt "$sub" 2>$out.collecterr
            echo collect_rc=$?
        fi
        umount $mnt 2>>$out.mount
        echo umount_rc=$?
    else
        echo mount_rc=$?
    fi
    if [ "$fsck_where" = host ]; then
        dmesg -c >$out.dmesg
        return
    fi
    case "$fs" in
        # -P: no prefetch threads, which cost a 1-vCPU guest more than they save (bench/check_options.py)
        xfs) xfs_repair -n -P $repair_opt "$dev" >$out.fsck 2>&1 ;;
        ext4|ext3|ext2) e2fsck -fn "$dev" >$out.fsck 2>&1 ;;
        btrfs) btrfs check --readonly "$dev" >$out.fsck 2>&1 ;;
        f2fs) echo n | fsck.f2fs --dry-run "$dev" >$out.fsck 2>&1 ;;  # "n": restore no lost files
        *) echo "unknown filesystem $fs" >$out.fsck; false ;;
    esac
    echo fsck_rc=$?
    dmesg -c >$out.dmesg
}

# The kernel name of the disk at LUN $1 of the virtio-scsi controller, once it can be opened
# (sysfs shows a disk before it may be opened), in $name; false after 30 s.
await_lun() {
    tries=0
    while [ $tries -lt 3000 ]; do
        for d in /sys/bus/virtio/drivers/virtio_scsi/virtio*/host*/target*/*:0:0:$1/block/*; do
            [ -e "$d" ] && name=${d##*/} && { true <"/dev/$name"; } 2>/dev/null && return 0
        done
        usleep 10000
        tries=$((tries + 1))
    done
    return 1
}

many() {
    if [ "$1" = --no-fsck ]; then fsck_where=host; shift; fi
    fs=$1 sub=$2 collect=$3 logdev=
    shift 3
    devs= files=
    for lun; do
        await_lun $lun || { echo disk_missing=$lun; return 0; }
        devs="$devs /dev/$name"
    done
    dmesg -c >/dev/null
    i=0
    for dev in $devs; do
        i=$((i + 1)) out=/tmp/pp-many.$i
        blob=$out.blob
        : >$out.fsck; : >$out.mount; : >$out.dmesg; : >$blob
        check >$out.keys
        files="$files $out.keys $out.fsck $out.mount $out.dmesg $blob"
    done
    wc -c $files
    echo ---data
    cat $files
}

mkdir -p $mnt
if [ "$1" = --many ]; then
    shift
    many "$@"
    exit 0
fi
fs=$1 dev=$2 sub=$3 collect=${4:-tar} logdev=$5
out=/tmp/check
case "$collect" in sums) blob=/tmp/check.sums ;; *) blob=/tmp/check.tar ;; esac
rm -f /tmp/check.*
dmesg -c >/dev/null
check
