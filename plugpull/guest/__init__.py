"""Guests: the image they boot and the backends that run it.

Takes a `MachineSpec` (disks, bus, write cache, recorder) and a `GuestImage` (kernel and
initramfs built from Debian packages, cached by content); a backend (`backend.py`: the
contract; "qemu": `Machine`) gives a guest that runs commands, takes files and hot-plugged
disks, streams acks, and dies on `power_cut()`. Nothing here knows of filesystems.
"""
