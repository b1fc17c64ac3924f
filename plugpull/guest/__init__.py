"""Guests: the image they boot and the QEMU machines that run it.

Takes a `MachineSpec` (disks, bus, write cache, recorder) and a `GuestImage` (kernel and
initramfs built from Debian packages, cached by content); gives a `Machine` that runs
commands, streams acks, and dies on `power_cut()`. Nothing here knows of filesystems.
"""
