# plugpull generated workload seq3-33156267: setxattr B/bar, fdatasync B/bar; removexattr B/bar, fdatasync B/bar; setxattr B/bar, fdatasync B/bar
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
# 2: removexattr B/bar
pp-xattr remove B/bar user.pp
sync -d B/bar  # point 2: fdatasync B/bar
echo 'ack 2' >&4
# 3: setxattr B/bar
pp-xattr set B/bar user.pp v3
sync -d B/bar  # point 3: fdatasync B/bar
echo 'ack 3' >&4
