# A workload of your own, run by busybox sh in the work directory on the filesystem under
# test. fd 4 is the ack port: `echo "ack ID" >&4` once what ID stands for is durable.
# Here: 20 records, one file each, each made durable (fsync of the file and of its
# directory) before it is acknowledged.
i=1
while [ $i -le 20 ]; do
    echo "record $i" > rec-$i
    sync rec-$i . || exit 1
    echo "ack $i" >&4
    i=$((i + 1))
done
