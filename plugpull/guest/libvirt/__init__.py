"""The "libvirt" backend: each guest a transient libvirt domain, on this host or another.

`machine` (LibvirtBackend and its guests), `domain` (the domain XML, golden-tested; its disks
are the QEMU backend's own arguments), `devices` (hot-plugged disks' XML), `remote` (a host
whose file system plugpull does not share: files, channels and console over the
connection), `daemon` (this host's libvirtd and virtlogd, started when nobody runs them),
`users` (who shares the daemons plugpull started), `instance` (a second daemon pair on
loopback TCP, a second host for tests).
"""
