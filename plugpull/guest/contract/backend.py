"""The backend contract: the few operations the lab needs from a guest, whatever runs it.

A backend is a factory of guests, `backend.machine(spec, image, accel, ...)`; the guest it
returns is not running yet and is used as a context manager:

    with rig.backend.machine(spec, image, accel, name="checker") as g:   # enter boots
        g.run("ls %s", path).check()                                    # -> GuestResult
        g.write_file("/tmp/workload.sh", script, mode=0o755)
        disk = g.attach_disk(DiskSpec(state, Bus.SCSI, snapshot=True))   # hot-plugged
        g.detach_disk(disk)
        g.acks.set_stamp(log_size); g.acks.get(timeout=1.0)              # a line, or None at EOF
        g.power_cut()                                                    # expected, not an error
                                                                         # exit: the guest is gone

Failures keep to plugpull's error tree: `LaunchError` when the guest never came up (enter),
`GuestError` when it stopped answering (run, write_file, attach, detach), `GuestTimeout` when
an answer came too late. None of them is ever a filesystem verdict.

Backends: "qemu" (`plugpull.guest.qemu.machine`), one QEMU process per guest; "libvirt"
(`plugpull.guest.libvirt.machine`), a transient libvirt domain per guest. The shared logic
below (uploading a file, finding a hot-plugged disk) uses nothing but `run`.
"""

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, runtime_checkable

from plugpull.errors import GuestError
from plugpull.guest.contract.channel import GuestResult, StampedLine
from plugpull.guest.contract.config import Accel, DiskSpec, MachineSpec
from plugpull.guest.image.build import GuestImage

UPLOAD_CHUNK = 32 << 10  # bytes per command: the agent reads each command line byte by byte
DISK_WAIT_SECONDS = 30


class Launched:
    """A guest as a context manager: entering launches it, and closes what a launch that
    failed half-way left behind; leaving closes it. Backends give `launch` and `close`."""

    def __enter__(self):
        try:
            self.launch()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass(frozen=True)
class AttachedDisk:
    """A disk plugged into a running guest: the backend's handle and the guest's name for it."""

    handle: str
    serial: str
    device: str  # the guest kernel's name: sdq ("" if attach_disk did not wait for the guest)


class AckStream(Protocol):
    """Lines the guest writes to its ack port, each stamped by the host on arrival."""

    lines: list[StampedLine]

    def set_stamp(self, stamp: Callable[[], object]) -> None: ...

    def get(self, timeout: float | None = None) -> StampedLine | None: ...

    def drain(self) -> list[StampedLine]: ...


@runtime_checkable
class Guest(Protocol):
    spec: MachineSpec
    name: str
    accel: Accel
    boot_seconds: float | None  # set once booted
    console_log: Path | None
    acks: AckStream | None  # set once booted

    def __enter__(self) -> "Guest": ...

    def __exit__(self, *exc) -> None: ...

    def run(self, command: str, *args, timeout: float | None = 120.0) -> GuestResult: ...

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None: ...

    def attach_disk(self, disk: DiskSpec, wait: bool = True) -> AttachedDisk: ...

    def detach_disk(self, disk: AttachedDisk, wait: bool = True) -> None: ...

    def alive(self) -> bool: ...

    def io_error(self) -> dict | None: ...  # a host I/O error the guest is paused on

    def power_cut(self) -> None: ...

    def close(self) -> None: ...


class Backend(Protocol):
    name: str

    def machine(self, spec: MachineSpec, image: GuestImage, accel: Accel, *,
                console_log: Path | None = None, name: str | None = None,
                boot_timeout: float = 120.0) -> Guest: ...


def upload(guest: Guest, path: str, data: bytes | str, mode: int = 0o644) -> None:
    """Write `data` to `path` in the guest through `run` alone: base64 chunks appended to a
    temporary beside `path`, renamed over it at the end. Every argument is quoted by `run`."""
    if isinstance(data, str):
        data = data.encode()
    partial = f"{path}.pp-partial"
    guest.run(": > %s", partial).check()
    for start in range(0, len(data), UPLOAD_CHUNK):
        chunk = base64.b64encode(data[start:start + UPLOAD_CHUNK]).decode()
        guest.run("echo %s | base64 -d >> %s", chunk, partial).check()
    guest.run("chmod %s %s && mv -f %s %s", f"{mode:o}", partial, partial, path).check()


DISK_FUNCTIONS = (
    "serial_of() { tail -c +5 \"$1/device/vpd_pg80\" 2>/dev/null | tr -d ' \\000'; }; "
    "lookup() { for d in /sys/block/sd*; do [ -e \"$d\" ] || continue; "
    "[ \"$(serial_of \"$d\")\" = \"$1\" ] && echo ${d##*/} && return 0; "
    "done; return 1; }; "
    "await_disk() { i=0; while [ $i -lt $3 ]; do "
    "if name=$(lookup $1); then [ $2 = present ] && head -c 512 /dev/$name >/dev/null 2>&1 "
    "&& echo $name && return 0; "
    "else [ $2 = gone ] && return 0; fi; "
    "usleep 10000; i=$((i + 1)); done; return 1; }; ")
FIND_DISK = DISK_FUNCTIONS + "await_disk %s %s %s"
DISK_TRIES = DISK_WAIT_SECONDS * 100


def await_disk_command(serial: str, var: str) -> str:
    """Guest shell that waits until the disk with `serial` can be read and sets `var` to its
    kernel name, or prints `disk_missing=SERIAL` and ends the command: a check can start
    with it instead of a round trip of its own (`wait_for_disk`)."""
    if not (serial.isalnum() and var.isidentifier()):
        raise ValueError(f"bad disk serial or variable: {serial!r} {var!r}")
    return (f"{DISK_FUNCTIONS}{var}=$(await_disk {serial} present {DISK_TRIES}) || "
            f"{{ echo disk_missing={serial}; exit 0; }}; ")


def wait_for_disk(guest: Guest, serial: str, present: bool = True) -> str:
    """The guest's name of the disk with this serial once it shows up (present=True), or ""
    once no disk has it any more (present=False). The guest has no hotplug daemon, so the
    disk is looked up by serial in sysfs. A disk is present once it can be read: the kernel
    shows it in sysfs before it lets it be opened, and a mount in between fails (ENXIO),
    which would make a good state look unmountable. A glob that matched nothing stays
    unexpanded and is skipped: expanded later, once a disk shows up, it named the disk `sd*`."""
    want = "present" if present else "gone"
    result = guest.run(FIND_DISK, serial, want, DISK_TRIES, timeout=DISK_WAIT_SECONDS + 30)
    if result.rc != 0:
        raise GuestError(f"disk {serial} is not {want} in the guest after {DISK_WAIT_SECONDS} s")
    return result.text.strip()
