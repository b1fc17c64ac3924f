#!/bin/sh
# The guest end of the command channel. The host sends "ID BASE64(command)\n"; the agent
# runs the command and answers "ID RC STDOUT_LEN STDERR_LEN\n" followed by both outputs.
exec 3<>"$1"
cd /root
printf 'READY %s\n' "$(uname -r)" >&3
while read -r id b64 <&3; do
    echo "$b64" | base64 -d > /tmp/.pp-cmd
    sh /tmp/.pp-cmd </dev/null >/tmp/.pp-out 2>/tmp/.pp-err
    rc=$?
    printf '%s %d %d %d\n' "$id" "$rc" "$(wc -c </tmp/.pp-out)" "$(wc -c </tmp/.pp-err)" >&3
    cat /tmp/.pp-out /tmp/.pp-err >&3
done
