"""The "qemu" backend: QEMU started directly, one process per guest, controlled over QMP.

`machine` (Machine, the process's owner; QEMU, the backend; the KVM probe), `argv` (the QEMU
command line, golden-tested, and QEMU's version), `process` (QEMU dies with plugpull),
`accel` (KVM or TCG), `hotplug` (disks plugged over QMP), `export` (a plugged disk as a
read-only file on the host), `snapshot` (a guest saved once and restored instead of booted).
"""
