# plugpull generated workload seq1-000000: creat A/foo, sync
# run in the empty work directory of a fresh filesystem, fd 4 open on the ack port
set -e
# setup, made durable: ack 0
mkdir A
sync
echo 'ack 0' >&4
# 1: creat A/foo
touch A/foo
sync  # point 1: sync
echo 'ack 1' >&4
