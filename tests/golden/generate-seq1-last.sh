# plugpull generated workload seq1-000355: setxattr B/bar, fdatasync B/bar
# run in the empty work directory of a fresh filesystem, fd 4 open on the ack port
set -e
# setup, made durable: ack 0
mkdir B
xfs_io -f -c "pwrite -q -S 0x44 0 16384" B/bar
sync
echo 'ack 0' >&4
# 1: setxattr B/bar
pp-xattr set B/bar user.pp v1
sync -d B/bar  # point 1: fdatasync B/bar
echo 'ack 1' >&4
