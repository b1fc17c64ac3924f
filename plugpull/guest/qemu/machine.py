"""The "qemu" backend (see `contract.backend`): one QEMU process per `Machine`, a context manager
that owns the process, its QMP connection, its channels and its temp dir: leaving the `with`
block guarantees all are gone.

    with Machine(MachineSpec(disks=(DiskSpec(path),)), image) as m:
        m.run("cat /sys/block/sda/queue/write_cache")
        m.power_cut()          # an expected SIGKILL, not an anomaly
"""

import json
import logging
import os
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from qemu.qmp.legacy import QEMUMonitorProtocol

from plugpull.guest.qemu import accel as accel_mod
from plugpull.guest.qemu import hotplug, snapshot
from plugpull.guest.qemu.export import Exports
from plugpull.guest.contract.backend import AttachedDisk, Launched, upload, wait_for_disk
from plugpull.guest.contract.channel import CommandChannel, GuestResult, LineStream, quote_command
from plugpull.guest.contract.config import Accel, Bus, ChannelFds, DiskSpec, MachineSpec
from plugpull.errors import GuestError, LaunchError, ToolMissing
from plugpull.guest.image.build import GuestImage
from plugpull.files import atomic_write_json
from plugpull.paths import cache_dir, make_tempdir
from plugpull.guest.qemu.process import spawn
from plugpull.guest.qemu.argv import QEMU_BINARY, qemu_argv, qemu_version

log = logging.getLogger(__name__)

KVM_PROBE_TIMEOUT = 20.0
UNPLUG_TIMEOUT = 30.0


def _first_line(command: str, width: int = 160) -> str:
    """A command as a log line shows it: its first line, cut to `width` characters."""
    line = command.split("\n", 1)[0]
    return line if len(line) <= width and "\n" not in command else line[:width] + " ..."


def create_disk(path: Path, size_mib: int) -> Path:
    """A sparse raw image of the given size."""
    with open(path, "wb") as f:
        f.truncate(size_mib << 20)
    return path


def _quiet_qmp_task(loop, context: dict) -> None:
    """A QMP task left failed by a signal that cut its handshake short would be printed as
    "Task exception was never retrieved" at exit; the guest's own error says what happened."""
    log.debug("QMP: %s", context.get("exception") or context.get("message"))


class Machine(Launched):
    def __init__(self, spec: MachineSpec, image: GuestImage, accel: Accel | None = None,
                 console_log: Path | None = None, boot_timeout: float = 120.0,
                 name: str | None = None, restore: Path | None = None):
        self.spec = spec
        self.restore = restore  # a saved state (`snapshot`) to start from instead of booting
        self.image = image
        self.accel = accel if accel is not None else resolve_accel(spec.accel, image).accel
        self.console_log = console_log
        self.boot_timeout = boot_timeout
        self.name = name or spec.test_id()
        self.boot_seconds: float | None = None
        self.guest_release: str | None = None
        self.argv: list[str] = []
        self.power_was_cut = False
        self.qmp: QEMUMonitorProtocol | None = None
        self.acks: LineStream | None = None
        self._proc: subprocess.Popen | None = None
        self._tmp: Path | None = None
        self._sockets: list[socket.socket] = []
        self._channel: CommandChannel | None = None
        self._luns = hotplug.Luns(first=len(spec.disks))
        self._overlays: dict[str, Path] = {}
        self._exports: Exports | None = None

    @property
    def tempdir(self) -> Path:
        assert self._tmp is not None, "not launched"
        return self._tmp

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def launch(self) -> None:
        if shutil.which(QEMU_BINARY) is None:
            raise ToolMissing(QEMU_BINARY, "install the Debian package qemu-system-x86 (make deps)")
        for part in (self.image.kernel, self.image.initramfs):
            if not Path(part).is_file():
                raise LaunchError(f"the guest image's {Path(part).name} is gone ({part}): removed from the "
                                  "image cache while in use? the next run rebuilds it", [], None, "")
        self._tmp = make_tempdir("vm")
        if self.console_log is None and not self.spec.interactive:
            self.console_log = self._tmp / "console.log"
        pairs = [socket.socketpair() for _ in range(3)]
        ours = [a for a, _ in pairs]
        theirs = [b for _, b in pairs]
        self._sockets = ours
        fds = ChannelFds(*(s.fileno() for s in theirs))
        self.argv = qemu_argv(self.spec, self.image, self.accel, fds, self.console_log)
        if self.restore:
            self.argv += ["-incoming", "defer"]
        stderr_path = self._tmp / "qemu.stderr"
        log.debug("%s: %s", self.name, shlex.join(self.argv))
        started = time.monotonic()
        with open(stderr_path, "wb") as err:
            interactive = self.spec.interactive
            self._proc = spawn(
                self.argv,
                pass_fds=[s.fileno() for s in theirs],
                stdin=subprocess.PIPE if interactive else subprocess.DEVNULL, bufsize=0,
                stdout=None if interactive else err,
                stderr=err,
                start_new_session=not interactive,
                env={**os.environ, "TMPDIR": str(self._tmp)},  # where snapshot=on overlays go
            )
        for s in theirs:
            s.close()
        qmp_sock, cmd_sock, ack_sock = ours
        self._channel = CommandChannel(cmd_sock)
        self.acks = LineStream(ack_sock)
        try:
            self.qmp = QEMUMonitorProtocol(qmp_sock)
            loop = getattr(self.qmp, "_aloop", None)  # qemu.qmp's own loop, when it has one
            if loop is not None:
                loop.set_exception_handler(_quiet_qmp_task)
            self.qmp.connect()
            self.guest_release = self._restored() if self.restore else self._channel.wait_ready(self.boot_timeout)
        except Exception as e:  # QMP and the channel fail in their own ways when QEMU dies early
            log.debug("%s did not become ready under %s%s: %s", self.name, self.accel,
                      f" from {self.restore}" if self.restore else "", e)
            raise LaunchError(f"guest did not become ready: {e}", self.argv,
                              self._exitcode_after(1.0), self._early_output()) from None
        self.boot_seconds = time.monotonic() - started
        log.debug("%s %s in %.1f s under %s (kernel %s)", self.name, "restored" if self.restore else "booted",
                  self.boot_seconds, self.accel, self.guest_release)

    def _restored(self) -> str:
        """Load the saved state, then ask the agent for the kernel release, with the guest's
        clock set to the host's on the way: a restored guest has no READY to send."""
        snapshot.load(self.qmp, self.restore)
        answer = self._channel.run(f"date -s @{int(time.time())} >/dev/null && uname -r", self.boot_timeout)
        if answer.rc != 0:
            raise GuestError(f"the restored guest's agent failed (rc {answer.rc}): {answer.stderr!r}")
        return answer.text.strip()

    def save_state(self, path: Path) -> None:
        """Save this running, idle guest to `path` (`snapshot`); it stays paused afterwards."""
        try:
            snapshot.save(self.qmp, path)
        except GuestError:
            raise
        except Exception as e:  # qemu.qmp's own errors: an error reply, a lost socket
            raise GuestError(f"saving the guest failed: {e}") from None

    def _exitcode_after(self, seconds: float):
        try:
            return self._proc.wait(seconds)
        except subprocess.TimeoutExpired:
            return None

    def _early_output(self) -> str:
        parts = []
        for path in (self._tmp / "qemu.stderr", self.console_log):
            if path and Path(path).is_file():
                parts.append(Path(path).read_text(errors="replace"))
        return "\n".join(parts)

    def run(self, command: str, *args, timeout: float | None = 120.0) -> GuestResult:
        """Run a shell command in the guest; arguments are quoted (`run("ls %s", path)`)."""
        if self._channel is None:
            raise GuestError("machine not launched")
        text, started = quote_command(command, *args), time.monotonic()
        try:
            result = self._channel.run(text, timeout)
            log.debug("%s: rc %d in %.2f s: %s", self.name, result.rc, time.monotonic() - started, _first_line(text))
            return result
        except GuestError as e:
            log.debug("%s: failed after %.2f s (%s): %s", self.name, time.monotonic() - started, e, _first_line(text))
            if self._proc and self._proc.poll() is not None and not self.power_was_cut:
                raise GuestError(f"QEMU exited (code {self._proc.returncode}): {e}") from None
            raise

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Put `data` at `path` in the guest, through the command channel."""
        upload(self, path, data, mode)

    def attach_disk(self, disk: DiskSpec, wait: bool = True) -> AttachedDisk:
        """Plug a disk into the running guest's virtio-scsi controller; returns once the
        guest sees it (without `wait`, at once: the device is then "" and the caller's next
        command waits for it, `await_disk_command`). With `disk.snapshot` the file is only read."""
        hotplug.check_pluggable(disk)
        if self.spec.bus is not Bus.SCSI:
            raise ValueError("hot-plugging needs the virtio-scsi controller: boot with scsi_controller")
        lun = self._luns.take()
        node = f"hotdisk{lun}"
        overlay = hotplug.create_overlay(disk.path, self.tempdir / f"{node}.qcow2") if disk.snapshot else None
        if overlay:
            self._overlays[node] = overlay
        self._qmp("blockdev-add", hotplug.blockdev_options(disk, node, overlay))
        try:
            self._qmp("device_add", hotplug.scsi_device_options(node, lun, disk))
        except GuestError:
            self._qmp("blockdev-del", {"node-name": node})
            raise
        serial = f"plugpull{lun}"
        return AttachedDisk(node, serial, wait_for_disk(self, serial) if wait else "")

    def detach_disk(self, disk: AttachedDisk, wait: bool = True) -> None:
        """Unplug a disk that attach_disk plugged in; returns once QEMU let go of it and
        (with `wait`) once the guest lost it too."""
        self.detach_disks([disk])
        if wait:
            wait_for_disk(self, disk.serial, present=False)

    def detach_disks(self, disks: list[AttachedDisk]) -> None:
        """Unplug several at once (the guest lets go of them together); returns once QEMU let go of all."""
        for disk in disks:
            self._qmp("device_del", {"id": disk.handle})
        self._wait_event("DEVICE_DELETED", "device", *(disk.handle for disk in disks))
        for disk in disks:
            self._qmp("blockdev-del", {"node-name": disk.handle})
            self._luns.release(int(disk.handle.removeprefix("hotdisk")))
            overlay = self._overlays.pop(disk.handle, None)
            if overlay:
                overlay.unlink(missing_ok=True)

    @property
    def exports(self) -> Exports:
        """Hot-plugged disks, by handle, as read-only files on the host (`export`)."""
        if self._exports is None:
            self._exports = Exports(self._qmp, lambda event, id: self._wait_event(event, "id", id), self.tempdir)
        return self._exports

    def _qmp(self, command: str, arguments: dict) -> object:
        if self.qmp is None:
            raise GuestError("machine not launched")
        try:
            return self.qmp.cmd(command, **arguments)
        except Exception as e:  # qemu.qmp raises its own tree: an error reply, a lost socket
            raise GuestError(f"QMP {command} failed: {e}") from None

    def _wait_event(self, name: str, key: str, *values: str) -> None:
        """Until QEMU has sent event `name` with data[key] equal to each of `values`."""
        deadline, waiting = time.monotonic() + UNPLUG_TIMEOUT, set(values)
        while waiting and (left := deadline - time.monotonic()) > 0:
            try:
                event = self.qmp.pull_event(wait=float(left))
            except Exception:
                break
            if event and event.get("event") == name:
                waiting.discard(event.get("data", {}).get(key))
        if waiting:
            raise GuestError(f"QEMU did not send {name} for {', '.join(sorted(waiting))} within {UNPLUG_TIMEOUT:.0f} s")

    def io_error(self) -> dict | None:
        """The BLOCK_IO_ERROR event's data if QEMU paused the guest on a host I/O error, else None.

        A host write that fails with ENOSPC (the disk's file or its write log) pauses the
        guest, the devices' `werror=enospc` default, instead of failing the guest's write:
        the filesystem under test never sees the harness's fault, but the guest stands still."""
        if self.qmp is None or not self.alive():
            return None
        if self._qmp("query-status", {}).get("status") != "io-error":
            return None
        errors = [e.get("data", {}) for e in self.qmp.get_events(wait=False) if e.get("event") == "BLOCK_IO_ERROR"]
        return errors[-1] if errors else {"reason": "unknown", "nospace": False}

    def wait(self) -> int:
        """Until QEMU exits by itself (an interactive guest powered off)."""
        return self._proc.wait()

    @property
    def console_input(self):
        """What an interactive guest's console reads (QEMU's stdin): `cli.guests.type_into`."""
        assert self.spec.interactive and self._proc is not None, "an interactive guest, launched"
        return self._proc.stdin

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def power_cut(self) -> None:
        """Pull the plug: SIGKILL QEMU. Expected, so not an error."""
        log.debug("%s: power cut", self.name)
        self.power_was_cut = True
        if self.alive():
            self._proc.kill()
        if self._proc:
            self._proc.wait()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Orderly stop: flush the guest's caches, then ask QEMU to quit."""
        if not self.alive():
            return
        try:
            self.run("sync", timeout=timeout)
            self.qmp.cmd("quit")
        except Exception:
            pass
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self._proc is not None and self._proc.stdin is not None:
            self._proc.stdin.close()  # unbuffered: nothing left to write that could fail
        if self.qmp is not None:
            try:
                self.qmp.close()
            except Exception:
                pass
            self.qmp = None
        for s in self._sockets:
            s.close()
        self._sockets = []
        if self._exports is not None:
            self._exports.abandon()
            self._exports = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


@dataclass(frozen=True)
class QemuBackend:
    """The backend whose guests are `Machine`s: QEMU started directly, controlled over QMP."""

    name: str = "qemu"

    def machine(self, spec: MachineSpec, image: GuestImage, accel: Accel, *, console_log: Path | None = None,
                name: str | None = None, boot_timeout: float = 120.0, restore: Path | None = None) -> Machine:
        return Machine(spec, image, accel, console_log=console_log, boot_timeout=boot_timeout, name=name,
                       restore=restore)

    def saved_state(self, spec: MachineSpec, image: GuestImage, accel: Accel) -> Path:
        """Where a saved guest of this machine lives (`snapshot`): restores are this backend's own."""
        return snapshot.saved_state_path(spec, image, accel, qemu_version())


QEMU = QemuBackend()


def _probe_file() -> Path:
    return cache_dir() / "kvm-probe.json"


def _probe_identity() -> str:
    return f"{os.uname().release} {qemu_version()}"


def cached_probe() -> dict | None:
    """The remembered KVM probe ({"ok": bool, "detail": str}) for this host and QEMU, if any."""
    try:
        data = json.loads(_probe_file().read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("identity") == _probe_identity() else None


def probe_kvm(image: GuestImage) -> dict:
    """Boot the image under KVM with a short timeout; remember whether it came up."""
    try:
        with Machine(MachineSpec(), image, accel=Accel.KVM, boot_timeout=KVM_PROBE_TIMEOUT,
                     name="kvm-probe") as m:
            result = {"ok": True, "detail": f"booted in {m.boot_seconds:.1f} s"}
    except LaunchError as e:
        result = {"ok": False, "detail": str(e).splitlines()[-1][:200]}
    result["identity"] = _probe_identity()
    path = _probe_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, result)
    return result


def resolve_accel(requested: Accel, image: GuestImage) -> accel_mod.Decision:
    device_ok, reason = accel_mod.kvm_device_usable()
    probe = cached_probe() if device_ok else None
    decision = accel_mod.decide(requested, device_ok, reason, probe and probe["ok"])
    if decision.needs_probe:
        probe = probe_kvm(image)
        decision = accel_mod.decide(requested, device_ok, reason, probe["ok"])
    if probe and not probe["ok"] and decision.accel is Accel.TCG:
        decision = accel_mod.Decision(decision.accel, f"{decision.reason} ({probe.get('detail', '')})")
    return decision
