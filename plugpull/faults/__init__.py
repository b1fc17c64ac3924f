"""Device faults under the filesystem: a dm-flakey table switched on and off at a trigger,
and the verdict on what the application was told against what survived.

    faultspec  --fault text -> FaultSpec (checked before any guest boots)
    table      FaultSpec -> the dm tables (linear, then the fault)
    told       the workload's ack-port lines: acks, errors (syscall, errno), wrong reads
    verdict    the verdict after the fault window (clean unmount, remount, fsck)
    inject     one run in a guest: fault on at the trigger, off after the window, judged
"""
