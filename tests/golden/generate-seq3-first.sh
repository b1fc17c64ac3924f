# plugpull generated workload seq3-000000: creat A/foo; creat A/bar; creat B/foo, sync
# run in the empty work directory of a fresh filesystem, fd 4 open on the ack port
set -e
# setup, made durable: ack 0
mkdir A
mkdir B
sync
echo 'ack 0' >&4
# 1: creat A/foo
touch A/foo
# 2: creat A/bar
touch A/bar
# 3: creat B/foo
touch B/foo
sync  # point 1: sync
echo 'ack 1' >&4
