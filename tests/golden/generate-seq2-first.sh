# plugpull generated workload seq2-000000: creat A/foo; creat A/bar, sync
# run in the empty work directory of a fresh filesystem, fd 4 open on the ack port
set -e
pp_acked() { echo "ack $1" >&4; while read -r pp_echo <&4; do [ "$pp_echo" = "ack $1" ] && return 0; done; return 0; }  # the ack, then its echo: the host has stamped it
# setup, made durable: ack 0
mkdir A
sync
pp_acked 0
# 1: creat A/foo
touch A/foo
# 2: creat A/bar
touch A/bar
sync  # point 1: sync
pp_acked 1
