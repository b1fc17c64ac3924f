# plugpull generated workload seq2-119035: setxattr B/bar, fdatasync B/bar; removexattr B/bar, fdatasync B/bar
# run in the empty work directory of a fresh filesystem, fd 4 open on the ack port
set -e
pp_acked() { echo "ack $1" >&4; while read -r pp_echo <&4; do [ "$pp_echo" = "ack $1" ] && return 0; done; return 0; }  # the ack, then its echo: the host has stamped it
# setup, made durable: ack 0
mkdir B
xfs_io -f -c "pwrite -q -S 0x44 0 16384" B/bar
sync
pp_acked 0
# 1: setxattr B/bar
pp-xattr set B/bar user.pp v1
sync -d B/bar  # point 1: fdatasync B/bar
pp_acked 1
# 2: removexattr B/bar
pp-xattr remove B/bar user.pp
sync -d B/bar  # point 2: fdatasync B/bar
pp_acked 2
