"""The test bed: the filesystem under test, formatted and mounted in a mode, on a stack and
a disk profile, with a workload ready to run in a guest.

Takes names (a filesystem, a mode, a stack of layers, a disk profile, a workload and its
parameters) and a rig; gives a guest with the disks formatted on the host, assembled and
mounted in the guest, the workload's directory and setup ready (`bed.testbed`), and the
workload's commands and oracle (`workloads`). Nothing here records, cuts or judges.

    fs          filesystems and barrier/cache modes, as table rows
    stack       layers between the filesystem and the disks (LVM, dm-crypt, md RAID)
    profiles    disk profiles: the cost of a flush, applied with dm-delay
    tree        the trees the tree workloads extract, copy and remove
    workloads   what runs in the guest, what its acks promise, how its states are examined
    bed         a guest with all of the above ready (`BedSpec` -> `Testbed`)
"""
