"""Throughput: the seeds' side of the trade-off, measured on the test bed.

Takes a `BedSpec` (filesystem, mode, workload, disk profile) and a rig; gives a `Throughput`
result: each phase's time and rate as the benchmark printed it, with its cause, the writes,
sectors and flushes the disk saw in it.

    measure     the timed steps of a workload in a guest (`measure`)
    parsers     what pp-smallfiles, fio and bonnie++ print -> `Phase`s
    diskstat    /sys/block/DEV/stat around each step -> `DiskIO`
"""
