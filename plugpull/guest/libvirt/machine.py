"""The "libvirt" backend (see `contract.backend`): each guest a transient libvirt domain,
created with `VIR_DOMAIN_START_AUTODESTROY` on a connection of its own, so that libvirt destroys it when
that connection goes, even when plugpull is SIGKILLed.

QEMU runs as libvirt's unprivileged user, and libvirt relabels nothing (see `domain`): the
files the domain uses are hard-linked into a directory of the guest's own, owned by that user,
and those QEMU writes (the disks, the write logs) are given to it. A hard link is the same
file: the lab reads the write log where it put it, while QEMU appends to it. On a host that
does not share this file system (`remote`), files, channels and console travel over the
connection instead (`libvirt.remote`); such a guest checks states, it records none.
"""

import logging
import os
import pwd
import shutil
import signal
import socket
import time
import uuid
from dataclasses import replace
from pathlib import Path

import libvirt

from plugpull.errors import GuestError, LaunchError, UsageError
from plugpull.guest.qemu import hotplug
from plugpull.guest.libvirt import devices as libvirt_devices
from plugpull.guest.contract.backend import AttachedDisk, Launched, upload, wait_for_disk
from plugpull.guest.contract.channel import CommandChannel, GuestResult, LineStream, quote_command
from plugpull.guest.contract.config import Accel, Bus, DiskSpec, MachineSpec
from plugpull.guest.libvirt.domain import ACK_PORT, COMMAND_PORT, DomainFiles, domain_xml
from plugpull.guest.image.build import GuestImage
from plugpull.guest.libvirt.remote import RemoteStaging, ensure_event_loop
from plugpull.paths import make_tempdir

log = logging.getLogger(__name__)

QEMU_USER = "libvirt-qemu"
QEMU_PID_DIR = Path("/run/libvirt/qemu")
UNPLUG_TIMEOUT = 30.0

libvirt.registerErrorHandler(lambda _ctx, _err: None, None)  # errors arrive as exceptions


def open_connection(uri: str) -> "libvirt.virConnect":
    try:
        return libvirt.open(uri)
    except libvirt.libvirtError as e:
        raise LaunchError(f"cannot connect to libvirt at {uri}: {e}") from None


def qemu_identity() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(QEMU_USER)
    except KeyError:
        raise LaunchError(f"no user {QEMU_USER}: install the Debian package libvirt-daemon-system") from None
    return entry.pw_uid, entry.pw_gid


class Staging:
    """The guest's own directory: files QEMU needs, reachable and owned as it needs them."""

    def __init__(self, user: int, group: int):
        self.user, self.group = user, group
        self.dir = make_tempdir("libvirt")
        os.chown(self.dir, user, group)

    def link(self, path: Path, writable: bool = False, name: str | None = None) -> Path:
        path = Path(path)
        if not path.exists():
            path.touch()
        staged = self.dir / (name or f"{len(list(self.dir.iterdir()))}-{path.name}")
        try:
            os.link(path, staged)
        except OSError:
            if writable:
                raise LaunchError(f"cannot hard-link {path} into {self.dir}: keep plugpull's files on "
                                  "the file system of its temp dir for the libvirt backend") from None
            shutil.copyfile(path, staged)
        if writable:
            self.own(staged)
        return staged

    def own(self, path: Path) -> Path:
        os.chown(path, self.user, self.group)
        return path

    def discard(self, paths: list[Path]) -> None:
        for path in paths:
            path.unlink(missing_ok=True)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class LibvirtMachine(Launched):
    def __init__(self, spec: MachineSpec, image: GuestImage, accel: Accel, uri: str,
                 console_log: Path | None = None, boot_timeout: float = 120.0, name: str | None = None,
                 qemu_pid_dir: Path | None = None, remote: bool = False):
        if spec.disks and any(d.host_device for d in spec.disks):
            raise UsageError("the libvirt backend takes image files, not block devices")
        self.spec, self.image, self.accel, self.uri = spec, image, accel, uri
        self.console_log = console_log
        self.qemu_pid_dir = qemu_pid_dir or (QEMU_PID_DIR if uri.startswith("qemu:///") else None)
        self.boot_timeout = boot_timeout
        self.remote = remote  # files, channels and console reach the guest over the connection
        self.name = name or spec.test_id()
        self.domain_name = f"plugpull-{self.name}-{uuid.uuid4().hex[:8]}"
        self.boot_seconds: float | None = None
        self.guest_release: str | None = None
        self.power_was_cut = False
        self.cut: dict[Path, int] = {}  # each write log's size when the power was cut
        self.acks: LineStream | None = None
        self.xml = ""
        self._conn = None
        self._dom = None
        self._staging: Staging | RemoteStaging | None = None
        self._sockets: list[socket.socket] = []
        self._channel: CommandChannel | None = None
        self._plugged = libvirt_devices.Plugged(first_unit=len(spec.disks))

    def _stage(self) -> tuple[MachineSpec, DomainFiles]:
        staging = self._staging = Staging(*qemu_identity())
        if self.console_log is None:
            self.console_log = console = staging.dir / "console.log"
            staging.own(console.touch() or console)
        else:
            Path(self.console_log).write_bytes(b"")
            console = staging.link(self.console_log, writable=True, name="console.log")
        disks = tuple(replace(d, path=staging.link(d.path, writable=not d.snapshot),
                              write_log=d.write_log and staging.link(d.write_log, writable=True))
                      for d in self.spec.disks)
        payload = self.spec.payload and staging.link(self.spec.payload)
        files = DomainFiles(staging.link(self.image.kernel, name="kernel"),
                            staging.link(self.image.initramfs, name="initramfs"),
                            staging.dir / "cmd.sock", staging.dir / "ack.sock",
                            console,
                            staging.user, staging.group)
        return replace(self.spec, disks=disks, payload=payload), files

    def _stage_remote(self) -> tuple[MachineSpec, DomainFiles]:
        try:
            self._staging = RemoteStaging(self._conn)
            return self._staging.stage(self.spec, self.image)
        except (libvirt.libvirtError, OSError) as e:
            raise LaunchError(f"cannot upload the guest's files to {self.uri}: {e}") from None

    def launch(self) -> None:
        started = time.monotonic()
        if self.remote:
            ensure_event_loop()  # before the connection: its streams are read on that loop
        self._conn = open_connection(self.uri)
        spec, files = self._stage_remote() if self.remote else self._stage()
        self.xml = domain_xml(spec, self.domain_name, self.accel, files)
        flags = libvirt.VIR_DOMAIN_START_AUTODESTROY | libvirt.VIR_DOMAIN_START_PAUSED
        try:
            self._dom = self._conn.createXML(self.xml, flags)
            cmd_sock, ack_sock = self._open_channels(files)
            self._channel = CommandChannel(cmd_sock)
            self.acks = LineStream(ack_sock)
            self._dom.resume()
            self.guest_release = self._channel.wait_ready(self.boot_timeout)
        except (libvirt.libvirtError, GuestError, OSError) as e:
            raise LaunchError(f"libvirt guest did not become ready: {e}", [self.domain_name],
                              None, self._early_output()) from None
        self.boot_seconds = time.monotonic() - started
        log.debug("%s (%s) booted in %.1f s", self.name, self.domain_name, self.boot_seconds)

    def _open_channels(self, files: DomainFiles) -> list[socket.socket]:
        """The command channel and the ack stream: the unix sockets QEMU listens on here, or
        (remote) the ports opened through libvirt, with the console; before the guest runs."""
        if not self.remote:
            return [self._connect(p) for p in (files.command_socket, files.ack_socket)]
        if self.console_log is not None:
            Path(self.console_log).write_bytes(b"")
            self._staging.open_console(self._dom, Path(self.console_log))
        return self._staging.open_channels(self._dom, (COMMAND_PORT, ACK_PORT))

    def _connect(self, path: Path) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sockets.append(sock)
        sock.connect(str(path))
        return sock

    def _early_output(self) -> str:
        path = Path(self.console_log) if self.console_log else None
        return path.read_text(errors="replace") if path and path.is_file() else ""

    def run(self, command: str, *args, timeout: float | None = 120.0) -> GuestResult:
        if self._channel is None:
            raise GuestError("machine not launched")
        try:
            return self._channel.run(quote_command(command, *args), timeout)
        except GuestError as e:
            if not self.power_was_cut and not self.alive():
                raise GuestError(f"the libvirt domain is gone: {e}") from None
            raise

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        upload(self, path, data, mode)

    def attach_disk(self, disk: DiskSpec, wait: bool = True) -> AttachedDisk:
        """Plug a disk in on the native virtio-scsi controller, through libvirt; with
        `disk.snapshot`, behind a throwaway qcow2 overlay, the file only read. Without
        `wait`, the device is "" and the caller's next command waits for it."""
        hotplug.check_pluggable(disk)
        if self.spec.bus is not Bus.SCSI or not self.spec.scsi_controller:
            raise ValueError("hot-plugging needs the virtio-scsi controller: boot with scsi_controller")
        unit, target = self._plugged.next()
        if self.remote:
            xml, files = self._libvirt(self._staging.plug, disk, unit, target)
            self._libvirt(self._dom.attachDeviceFlags, xml, libvirt.VIR_DOMAIN_AFFECT_LIVE)
            self._plugged.add(target, xml, files)
            return self._attached(unit, target, wait)
        staged = self._staging.link(disk.path, writable=not disk.snapshot)
        overlay = None
        if disk.snapshot:
            overlay = hotplug.create_overlay(staged, self._staging.dir / f"{target}.qcow2")
            self._staging.own(overlay)
        xml = libvirt_devices.disk_xml(replace(disk, path=staged), unit, target, overlay)
        self._libvirt(self._dom.attachDeviceFlags, xml, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self._plugged.add(target, xml, [p for p in (staged, overlay) if p])
        return self._attached(unit, target, wait)

    def _attached(self, unit: int, target: str, wait: bool) -> AttachedDisk:
        serial = libvirt_devices.serial(unit)
        return AttachedDisk(target, serial, wait_for_disk(self, serial) if wait else "")

    def detach_disk(self, disk: AttachedDisk, wait: bool = True) -> None:
        xml, files = self._plugged.pop(disk.handle)
        self._libvirt(self._dom.detachDeviceFlags, xml, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        deadline = time.monotonic() + UNPLUG_TIMEOUT
        while f"dev='{disk.handle}'" in self._libvirt(self._dom.XMLDesc, 0):
            if time.monotonic() > deadline:
                raise GuestError(f"libvirt did not report {disk.handle} unplugged within {UNPLUG_TIMEOUT:.0f} s")
            time.sleep(0.02)
        self._staging.discard(files)
        if wait:
            wait_for_disk(self, disk.serial, present=False)

    def _libvirt(self, call, *args):
        try:
            return call(*args)
        except libvirt.libvirtError as e:
            raise GuestError(f"libvirt {call.__name__} failed: {e}") from None

    def alive(self) -> bool:
        try:
            return self._dom is not None and bool(self._dom.isActive())
        except libvirt.libvirtError:
            return False

    def io_error(self) -> dict | None:
        """Like the QEMU backend's: the guest paused on a host I/O error, else None."""
        if not self.alive():
            return None
        state, reason = self._libvirt(self._dom.state)
        if state != libvirt.VIR_DOMAIN_PAUSED or reason != libvirt.VIR_DOMAIN_PAUSED_IOERROR:
            return None
        try:
            errors = self._dom.diskErrors()
        except libvirt.libvirtError:
            errors = {}
        return {"reason": "host I/O error", "nospace": libvirt.VIR_DOMAIN_DISK_ERROR_NO_SPACE in errors.values()}

    def power_cut(self) -> None:
        """Pull the plug. The write logs' sizes are taken first: `destroy` sends QEMU a
        SIGTERM, on which it drains its block devices and may log a flush the guest never
        sent, so what a log gains after the cut is cut off. On this host QEMU gets a SIGKILL
        first, as with the QEMU backend."""
        log.debug("%s: power cut", self.name)
        self.power_was_cut = True
        self.cut = cut = {d.write_log: os.stat(d.write_log).st_size for d in self.spec.disks if d.write_log}
        self._kill_local_qemu()
        self._destroy()
        for path, size in cut.items():
            os.truncate(path, size)

    def _kill_local_qemu(self) -> None:
        if self.qemu_pid_dir is None:
            return
        try:
            pid = int((self.qemu_pid_dir / f"{self.domain_name}.pid").read_text().strip())
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass  # gone already, or not visible from here: destroy does it

    def _destroy(self) -> None:
        if self._dom is None:
            return
        try:
            self._dom.destroy()
        except libvirt.libvirtError:
            self._kill_local_qemu()  # gone already, or its daemon is: then its QEMU lives on
        self._dom = None

    def close(self) -> None:
        self._destroy()
        for s in self._sockets:
            s.close()
        self._sockets = []
        if self._staging is not None:
            self._staging.remove()  # a remote guest's pool goes through the connection: before it
            self._staging = None
        if self._conn is not None:
            try:
                self._conn.close()
            except libvirt.libvirtError:
                pass
            self._conn = None


DEFAULT_URI = "qemu:///system"


class LibvirtBackend:
    """The backend whose guests are `LibvirtMachine`s on the libvirt at `uri`."""

    name = "libvirt"

    def __init__(self, uri: str = DEFAULT_URI, qemu_pid_dir: Path | None = None, remote: bool = False):
        self.uri = uri
        self.qemu_pid_dir = qemu_pid_dir  # where a daemon on this machine keeps its QEMUs' pids
        self.remote = remote  # reach guests only through the connection (`libvirt.remote`)

    def reachable(self) -> bool:
        """Whether the daemon still answers: a host that does not has dropped out."""
        try:
            conn = libvirt.open(self.uri)
        except libvirt.libvirtError:
            return False
        try:
            conn.getLibVersion()
            return True
        except libvirt.libvirtError:
            return False
        finally:
            conn.close()

    def machine(self, spec: MachineSpec, image: GuestImage, accel: Accel, *, console_log: Path | None = None,
                name: str | None = None, boot_timeout: float = 120.0) -> LibvirtMachine:
        return LibvirtMachine(spec, image, accel, self.uri, console_log=console_log,
                              boot_timeout=boot_timeout, name=name, qemu_pid_dir=self.qemu_pid_dir,
                              remote=self.remote)
