"""Checking: crash states in checker guests, and the verdict on each.

Takes crash-state images (with the filesystem, its stack, and what the workload's oracle
needs to collect); gives per state an `Observation` (recovery mount, the files or their
sums, fsck, the console's kernel trouble) and, with the acks the state owes, a verdict
(`verdict.classify`). Nothing here records a workload or builds a state.

    checker     checker guests, hot (states plugged in and out) or batch; the host's part
    hotguest    a checker guest that stays up, started from a saved guest where it can be
    hotbatch    several states in one guest command
    hostfsck    fsck on the host of a state the guest recovered
    spread      the checker's batches spread over libvirt hosts (--hosts)
    console     kernel trouble (panic, oops, BUG, hang) in a console or kernel log
    verdict     acks, what a state owes them, and the verdict on a state
    writehole   the RAID5 write hole in a state's evidence
"""
