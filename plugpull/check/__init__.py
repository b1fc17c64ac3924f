"""Checking: crash states in checker guests, and the verdict on each.

Takes crash-state images (with the filesystem, its stack, and what the workload's oracle
needs to collect); gives per state an `Observation` (recovery mount, the files or their
sums, fsck, the console's kernel trouble) and, with the acks the state owes, a verdict
(`verdict.classify`). Nothing here records a workload or builds a state.

    checker     the checker: settings, and the way of checking they choose (`path_for`)
    statecheck  one state's check on disks in a guest, shared by every way
    crew        the worker threads a way runs its guests on, and what stops them
    cold        the cold way: a guest booted per batch of states
    hot         the hot way: a guest per worker kept up, states plugged in and out
    hotbatch    on a hot guest, several states in one guest command
    hotguest    a checker guest that stays up, started from a saved guest where it can be
    slots       disks a hot guest keeps plugged in, each given the next state's bytes
    hostfsck    fsck on the host of a state the guest recovered
    spread      the cold way's batches spread over libvirt hosts (--hosts)
    console     kernel trouble (panic, oops, BUG, hang) in a console or kernel log
    verdict     acks, what a state owes them, and the verdict on a state
    writehole   the RAID5 write hole in a state's evidence
"""
