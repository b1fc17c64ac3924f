"""The libvirt backend on a host whose file system plugpull does not share (`remote`): what
the guest needs travels over the libvirt connection itself.

- Files (the kernel, the initramfs, the payload, crash states) are uploaded as volumes of a
  directory pool of the guest's own (`VolumePool`), sparse (`virStorageVolUpload` with
  `VIR_STORAGE_VOL_UPLOAD_SPARSE_STREAM`), owned by the host's QEMU user, which the host's
  capabilities name (`qemu_label`). The pool goes with its volumes and its directory.
- The command channel and the ack stream are the guest's virtio-serial ports opened with
  `virDomainOpenChannel`, the serial console with `virDomainOpenConsole`; each stream is
  pumped into a local socket (`StreamBridge`) or file (`ConsolePump`), so the rest of the
  backend reads them as it reads the unix sockets of a local guest.
"""

import hashlib
import logging
import os
import re
import socket
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import libvirt

from plugpull.errors import LaunchError, UsageError
from plugpull.guest.libvirt import devices as libvirt_devices
from plugpull.guest.contract.config import DiskSpec, MachineSpec
from plugpull.guest.libvirt.domain import DomainFiles
from plugpull.guest.libvirt.daemon import pid_alive

log = logging.getLogger(__name__)

POOL_PARENT = "/var/tmp"  # on the host: where each guest's pool directory is made
CHUNK = 1 << 16


def qemu_label(conn) -> tuple[int, int]:
    """The uid and gid QEMU runs as on the host of `conn`: the DAC base label in its capabilities."""
    caps = ET.fromstring(conn.getCapabilities())
    for model in caps.iterfind("host/secmodel"):
        if model.findtext("model") != "dac":
            continue
        for label in model.iterfind("baselabel"):
            if label.get("type") in ("qemu", "kvm") and label.text:
                user, _, group = label.text.partition(":")
                return int(user.lstrip("+")), int(group.lstrip("+"))
    raise LaunchError("the libvirt host names no DAC label for its QEMUs (is it a QEMU driver?)")


def _permissions(parent: ET.Element, mode: int, owner: tuple[int, int]) -> None:
    perms = ET.SubElement(parent, "permissions")
    ET.SubElement(perms, "mode").text = f"{mode:04o}"
    ET.SubElement(perms, "owner").text = str(owner[0])
    ET.SubElement(perms, "group").text = str(owner[1])


def pool_xml(name: str, path: str, owner: tuple[int, int]) -> str:
    pool = ET.Element("pool", type="dir")
    ET.SubElement(pool, "name").text = name
    target = ET.SubElement(pool, "target")
    ET.SubElement(target, "path").text = path
    _permissions(target, 0o700, owner)
    return ET.tostring(pool, encoding="unicode")


def volume_xml(name: str, capacity: int, owner: tuple[int, int], writable: bool) -> str:
    vol = ET.Element("volume")
    ET.SubElement(vol, "name").text = name
    ET.SubElement(vol, "capacity", unit="bytes").text = str(capacity)
    ET.SubElement(vol, "allocation", unit="bytes").text = "0"
    target = ET.SubElement(vol, "target")
    ET.SubElement(target, "format", type="raw")
    _permissions(target, 0o600 if writable else 0o400, owner)
    return ET.tostring(vol, encoding="unicode")


def next_section(fd: int) -> tuple[bool, int]:
    """(data?, length) of the section at fd's offset, the offset left where it was."""
    here = os.lseek(fd, 0, os.SEEK_CUR)
    end = os.fstat(fd).st_size
    if here >= end:
        return True, 0
    try:
        data = os.lseek(fd, here, os.SEEK_DATA)
    except OSError:  # ENXIO: only a hole is left
        data = end
    if data > here:
        os.lseek(fd, here, os.SEEK_SET)
        return False, data - here
    hole = os.lseek(fd, here, os.SEEK_HOLE)
    os.lseek(fd, here, os.SEEK_SET)
    return True, hole - here


def origin() -> str:
    """This machine, as the names of its pools say it (from /etc/machine-id, else the host name)."""
    try:
        text = Path("/etc/machine-id").read_text().strip()
    except OSError:
        text = socket.gethostname()
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def pool_name() -> str:
    return f"plugpull-{origin()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def left_by_the_dead(names: list[str], here: str, alive) -> list[str]:
    """The pools among `names` made by a plugpull of this machine that is gone (SIGKILLed:
    libvirt has no autodestroy for pools)."""
    stale = []
    for name in names:
        match = re.fullmatch(rf"plugpull-{here}-(\d+)-[0-9a-f]+", name)
        if match and not alive(int(match[1])):
            stale.append(name)
    return stale


def sweep_stale_pools(conn) -> list[str]:
    """Remove the pools a dead plugpull of this machine left on the host of `conn`."""
    names = [p.name() for p in _quietly(conn.listAllStoragePools) or []]
    stale = left_by_the_dead(names, origin(), pid_alive)
    for name in stale:
        pool = _quietly(conn.storagePoolLookupByName, name)
        if pool is not None:
            log.info("removing pool %s, left by a plugpull that is gone", name)
            remove_pool(pool)
    return stale


def remove_pool(pool) -> None:
    """Delete the volumes, stop the pool, delete its directory, undefine it: each step tried
    even when one before failed."""
    if _quietly(pool.isActive):
        for vol in _quietly(pool.listAllVolumes) or []:
            _quietly(vol.delete, 0)
        _quietly(pool.destroy)
    _quietly(pool.delete, 0)
    _quietly(pool.undefine)


class VolumePool:
    """A directory pool of plugpull's own on a host, defined, built and started on creation;
    `remove` deletes its volumes, stops it, deletes its directory and undefines it."""

    def __init__(self, conn, owner: tuple[int, int]):
        self.conn, self.owner = conn, owner
        self.name = pool_name()
        self.path = f"{POOL_PARENT}/{self.name}"
        self._count = 0
        self.pool = conn.storagePoolDefineXML(pool_xml(self.name, self.path, owner), 0)
        try:
            self.pool.build(0)
            self.pool.create(0)
        except libvirt.libvirtError:
            self.remove()
            raise

    def upload(self, path: Path, writable: bool = False, name: str | None = None) -> "libvirt.virStorageVol":
        """A volume holding `path`'s bytes; its holes travel as holes."""
        self._count += 1
        vol = self.pool.createXML(volume_xml(name or f"{self._count}-{Path(path).name}", os.path.getsize(path),
                                             self.owner, writable), 0)
        stream = self.conn.newStream(0)
        fd = os.open(path, os.O_RDONLY)
        try:
            vol.upload(stream, 0, 0, libvirt.VIR_STORAGE_VOL_UPLOAD_SPARSE_STREAM)
            stream.sparseSendAll(lambda _s, n, f: os.read(f, n), lambda _s, f: list(next_section(f)),
                                 lambda _s, n, f: os.lseek(f, n, os.SEEK_CUR), fd)
            stream.finish()
        except BaseException:
            _quietly(stream.abort)
            raise
        finally:
            os.close(fd)
        return vol

    def remove(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            remove_pool(pool)


def _quietly(call, *args):
    """`call`'s result, or None if libvirt refuses (cleanup goes on: the rest may still go)."""
    try:
        return call(*args)
    except libvirt.libvirtError as e:
        log.debug("libvirt %s: %s", getattr(call, "__name__", call), e)
        return None


_loop = threading.Lock()
_loop_running = False


def ensure_event_loop() -> None:
    """libvirt's default event loop, run by a thread of its own from the first call on: the
    guest's streams are read as their data arrives. A connection opened before the first call
    does not use it, so call this before opening one. (Blocking reads of several streams of
    one connection, each in a thread, stalled: the console's first line came, then nothing.)"""
    global _loop_running
    with _loop:
        if _loop_running:
            return
        libvirt.virEventRegisterDefaultImpl()
        threading.Thread(target=_run_loop, daemon=True, name="plugpull-libvirt-events").start()
        _loop_running = True


def _run_loop() -> None:
    while True:
        libvirt.virEventRunDefaultImpl()


class StreamPump:
    """A non-blocking libvirt stream opened by `open_stream`; what it brings is handed to
    `sink` on the event loop's thread, and `ended` is called once at its end."""

    EVENTS = libvirt.VIR_STREAM_EVENT_READABLE | libvirt.VIR_STREAM_EVENT_ERROR | libvirt.VIR_STREAM_EVENT_HANGUP

    def __init__(self, conn, open_stream, sink, ended=lambda: None):
        self.stream = conn.newStream(libvirt.VIR_STREAM_NONBLOCK)
        open_stream(self.stream)
        self._sink, self._ended, self._open = sink, ended, True
        self.stream.eventAddCallback(self.EVENTS, self._readable, None)

    def _readable(self, stream, events: int, _opaque) -> None:
        if events & libvirt.VIR_STREAM_EVENT_READABLE:
            try:
                data = stream.recv(CHUNK)
            except libvirt.libvirtError:
                data = b""
            if data == -2:
                return
            if data:
                try:
                    self._sink(data)
                    return
                except (OSError, ValueError):  # the reader is gone, or closed its file under us
                    pass
        self.close()

    def send(self, data: bytes) -> None:
        """Write all of `data` to the stream, waiting while it is full."""
        while data:
            sent = self.stream.send(data)
            if sent == -2:
                time.sleep(0.001)
                continue
            if sent < 0:
                raise OSError("libvirt stream send failed")
            data = data[sent:]

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        _quietly(self.stream.eventRemoveCallback)
        _quietly(self.stream.abort)
        self._ended()


def _quietly_close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class StreamBridge:
    """A guest channel opened by `open_stream`, served as `local`, a socket of this process:
    the event loop copies what the guest sends, a thread what is sent to it."""

    def __init__(self, conn, open_stream):
        self.local, self._far = socket.socketpair()
        self.pump = StreamPump(conn, open_stream, self._far.sendall, lambda: _quietly_close(self._far))
        threading.Thread(target=self._to_guest, daemon=True, name="plugpull-stream").start()

    def _to_guest(self) -> None:
        try:
            while data := self._far.recv(CHUNK):
                self.pump.send(data)
        except (libvirt.libvirtError, OSError):
            pass

    def close(self) -> None:
        self.pump.close()
        _quietly_close(self.local)


class ConsolePump:
    """The guest's serial console, opened over the connection, appended to a local file."""

    def __init__(self, conn, dom, path: Path):
        self._out = open(path, "ab", buffering=0)
        self.pump = StreamPump(conn, lambda s: dom.openConsole(None, s, libvirt.VIR_DOMAIN_CONSOLE_FORCE),
                               self._out.write, self._out.close)

    def close(self) -> None:
        self.pump.close()


class RemoteStaging:
    """What a guest on a remote host is given over its connection: its files as volumes of a
    pool of its own, its channels and console as streams. The uploads go over a connection of
    their own: on the guest's, where blocking reads of its channels wait, an upload stalled
    here. `remove` leaves nothing on the host."""

    def __init__(self, conn):
        self.conn = conn
        self.user, self.group = qemu_label(conn)
        self._upload_conn = libvirt.open(conn.getURI())
        self._opened: list = []
        try:
            sweep_stale_pools(self._upload_conn)
            self.volumes = VolumePool(self._upload_conn, (self.user, self.group))
        except BaseException:
            self._upload_conn.close()
            raise

    def stage(self, spec: MachineSpec, image) -> tuple[MachineSpec, DomainFiles]:
        """The spec with its files uploaded, and the domain's files: no sockets, a pty console."""
        if any(d.write_log for d in spec.disks):
            raise UsageError("a remote libvirt host checks states, it records none (its write log would "
                             "be on that host)")
        up = self.volumes.upload
        disks = tuple(replace(d, path=Path(up(d.path, writable=True).path())) for d in spec.disks)
        payload = spec.payload and Path(up(spec.payload).path())
        files = DomainFiles(Path(up(image.kernel, name="kernel").path()),
                            Path(up(image.initramfs, name="initramfs").path()),
                            None, None, None, self.user, self.group, console_pty=True)
        return replace(spec, disks=disks, payload=payload), files

    def plug(self, disk: DiskSpec, unit: int, target: str) -> tuple[str, list]:
        """The XML that plugs in a copy of `disk` uploaded as a volume, and that volume."""
        vol = self.volumes.upload(disk.path, writable=True)
        return libvirt_devices.volume_disk_xml(disk, unit, target, self.volumes.name, vol.name()), [vol]

    def discard(self, volumes: list) -> None:
        for vol in volumes:
            _quietly(vol.delete, 0)

    def open_channels(self, dom, ports: tuple[str, ...]) -> list[socket.socket]:
        """Local sockets, one per virtio-serial port of `dom`, opened with virDomainOpenChannel."""
        bridges = [StreamBridge(self.conn, lambda s, p=p: dom.openChannel(p, s, 0)) for p in ports]
        self._opened += bridges
        return [b.local for b in bridges]

    def open_console(self, dom, path: Path) -> None:
        self._opened.append(ConsolePump(self.conn, dom, path))

    def close_streams(self) -> None:
        for opened in self._opened:
            opened.close()
        self._opened = []

    def remove(self) -> None:
        self.close_streams()
        self.volumes.remove()
        _quietly(self._upload_conn.close)
