"""Power loss, modelled: pure code that never needs a guest.

Takes a write log (dm-log-writes format, as QEMU's blklogwrites records it), a base image
and a named, seeded model; gives the plan of which writes persist at a cut and the crash
state's image built from it.
"""
