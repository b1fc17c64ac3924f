"""Guests: the image they boot and the backends that run it.

Takes a `MachineSpec` (disks, bus, write cache, recorder) and a `GuestImage` (kernel and
initramfs built from Debian packages, cached by content); a backend gives a guest that runs
commands, takes files and hot-plugged disks, streams acks, and dies on `power_cut()`.
Nothing here knows of filesystems.

A room per concern, each importing only from the rooms before it:
- `image/`: the guest image (`build_image`, `GuestImage`), its cache, initramfs and kernel;
- `contract/`: what every backend gives and takes (`backend`: `Guest`, `Backend`), the
  frozen specs (`config`) and the host end of the guest's channels (`channel`);
- `qemu/`: the "qemu" backend, QEMU started directly (`machine.Machine`, `machine.QEMU`);
- `libvirt/`: the "libvirt" backend, a libvirt domain per guest, on this host or another;
- here: `rig` (image + accelerator + backend: how the lab boots guests), `backends` (the
  backends by name, checked before any guest boots), `blockdev` (whether a host block device
  is in use) and `testinfra_backend` (testinfra on a guest).
"""
