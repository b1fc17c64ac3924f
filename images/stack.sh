#!/bin/sh
# pp-stack create|open|close LAYERS [DEV...]: a storage stack between the filesystem and the
# disks DEV... LAYERS is comma-separated, from the disks up: md-raid1, md-raid5, md-raid5-ppl
# (first only, over every disk), md-raid5-journal (first only, the last disk its write journal),
# lvm (a linear LV), dm-crypt (LUKS2, a fixed test key).
# create makes a new stack, open assembles one that exists (a crash state's disks), both
# print `top=NAME`, the kernel's name of the device the filesystem lives on; close takes it
# down, top first. force-open is open with one member missing on purpose: where md refuses to
# start the array (dirty and degraded), mdadm --force, the operator's override. Not forced
# first: --force marks the array clean, and md would skip its PPL recovery.
# No udev here: LVM and libdevmapper make their device nodes themselves.
op=$1 layers=$(echo "$2" | tr ',+' '  ') force= journal=
[ "$op" != force-open ] || op=open force=--force
shift 2
devs="$*"
key=plugpull-stack-test-key
lvmconf='activation{udev_sync=0 udev_rules=0} devices{obtain_device_list_from_udev=0} backup{backup=0 archive=0}'
mkdir -p /run/lock/lvm /run/cryptsetup /run/mdadm /etc/lvm
export LVM_SUPPRESS_FD_WARNINGS=1

fail() { echo "pp-stack: $*" >&2; exit 1; }

kernel_name() {  # a device-mapper device's kernel name (dm-N), whose /dev node devtmpfs keeps
    dmsetup info -c --noheadings -o blkdevname "$1"
}

assemble() {  # assemble [--force]
    mdadm --assemble --run "$@" /dev/md0 $devs </dev/null >/tmp/stack.md 2>&1
}

forced() {  # the array md refused to start, started with --force after all
    mdadm --stop /dev/md0 >/dev/null 2>&1
    assemble --force && echo "forced=md refused to start it: mdadm --force"
}

md() {  # md LEVEL [create options]; $journal, when set, is the one of $devs that is no member
    level=$1
    shift
    members=$(for dev in $devs; do [ "$dev" = "$journal" ] || echo "$dev"; done)
    n=$(echo $members | wc -w)
    modprobe -a md_mod raid1 raid456 2>/dev/null
    if [ "$op" = create ]; then
        mdadm --create /dev/md0 --run --metadata=1.2 --level="$level" --raid-devices="$n" --assume-clean \
            "$@" $members </dev/null >/tmp/stack.md 2>&1 || fail "mdadm --create: $(tail -n 1 /tmp/stack.md)"
    else
        assemble || { [ -n "$force" ] && forced; } || fail "mdadm --assemble: $(tail -n 1 /tmp/stack.md)"
    fi
    devs=/dev/md0
}

lvm_layer() {
    dev=$devs
    if [ "$op" = create ]; then
        { lvm pvcreate -y -ff --config "$lvmconf" --devices "$dev" "$dev" && \
          lvm vgcreate --config "$lvmconf" --devices "$dev" ppvg "$dev" && \
          lvm lvcreate -y -Zn -Wn --config "$lvmconf" --devices "$dev" -l 100%FREE -n pplv ppvg; } \
            >/tmp/stack.lvm 2>&1 || fail "lvm: $(tail -n 1 /tmp/stack.lvm)"
    else
        lvm vgchange -ay --config "$lvmconf" --devices "$dev" ppvg >/tmp/stack.lvm 2>&1 \
            || fail "lvm vgchange -ay: $(tail -n 1 /tmp/stack.lvm)"
    fi
    devs=/dev/$(kernel_name ppvg-pplv)
}

crypt() {
    modprobe -a dm_crypt ecb xts algif_skcipher 2>/dev/null
    if [ "$op" = create ]; then
        printf %s "$key" | cryptsetup luksFormat --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
            --batch-mode --key-file - "$devs" >/tmp/stack.crypt 2>&1 || fail "cryptsetup luksFormat: $(tail -n 1 /tmp/stack.crypt)"
    fi
    printf %s "$key" | cryptsetup open --key-file - "$devs" ppcrypt >/tmp/stack.crypt 2>&1 \
        || fail "cryptsetup open: $(tail -n 1 /tmp/stack.crypt)"
    devs=/dev/$(kernel_name ppcrypt)
}

if [ "$op" = close ]; then  # every layer that is up, top first; fails if one stays up
    rc=0
    for layer in $(echo $layers | tr ' ' '\n' | sed -n '1!G;h;$p'); do
        case $layer in
            dm-crypt) ! dmsetup info ppcrypt >/dev/null 2>&1 || cryptsetup close ppcrypt ;;
            lvm) ! dmsetup info ppvg-pplv >/dev/null 2>&1 || dmsetup remove ppvg-pplv ;;
            md-*) [ ! -e /sys/block/md0/md ] || mdadm --stop /dev/md0 >/dev/null 2>&1 ;;
        esac || { echo "pp-stack: could not take down $layer" >&2; rc=1; }
    done
    exit $rc
fi
for layer in $layers; do
    [ -e "$(echo $devs | cut -d' ' -f1)" ] || fail "$layer: no device $devs"
    case $layer in
        md-raid1) md 1 --bitmap=internal ;;
        md-raid5) md 5 --bitmap=internal ;;
        md-raid5-ppl) md 5 --consistency-policy=ppl ;;
        md-raid5-journal) journal=${devs##* } && md 5 --write-journal "$journal" ;;
        lvm) lvm_layer ;;
        dm-crypt) crypt ;;
        *) fail "unknown layer $layer" ;;
    esac
done
[ -b "$devs" ] || fail "the stack's top $devs is not a block device"
echo "top=${devs#/dev/}"
