"""libvirt domain XML, built from the same frozen `MachineSpec` as the QEMU command line:
a pure function, golden-tested (tests/golden/*.xml).

What libvirt models natively is written natively: the kernel and its command line, the
serial console to a file, the virtio-serial channels (unix sockets QEMU listens on, the host
connects to), and the virtio-scsi controller that disks are hot-plugged on. The disks under
test are not: the recorder (`blklogwrites`) has no libvirt disk type, so every disk, and the
payload, goes through `<qemu:commandline>` with exactly the arguments of the QEMU backend
(`qemu.argv.disk_args`), and the two backends give the guest the same devices.

libvirt relabels nothing (`seclabel relabel='no'`): QEMU runs as the given unprivileged
user, and the backend hands it files it can reach (see `machine`).
"""

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from plugpull.guest.contract.config import Accel, Bus, MachineSpec
from plugpull.guest.qemu.argv import QEMU_BINARY, disk_args, escape, kernel_cmdline

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
EMULATOR = f"/usr/bin/{QEMU_BINARY}"
COMMAND_PORT = "plugpull.cmd"
ACK_PORT = "plugpull.ack"
# libvirt names the first native SCSI controller scsi0: the hot-plug controller.
HOTPLUG_CONTROLLER = 0
# QEMU sees the commandline's devices before libvirt's, which take PCI slots from 2 upwards:
# the passed-through PCI devices sit at fixed slots far above those.
PCI_SLOTS = {"ahci": 0x10, "scsi": 0x11, "payload": 0x12}


def _pci(device: str) -> str:
    return f"bus=pci.0,addr={PCI_SLOTS[device]:#x}"


@dataclass(frozen=True)
class DomainFiles:
    """The paths the domain uses, as QEMU sees them, and the user it runs as. Without socket
    paths, libvirt places the channels' sockets itself (they are opened through libvirt);
    with `console_pty`, the console is a pty read through libvirt too."""

    kernel: Path
    initramfs: Path
    command_socket: Path | None
    ack_socket: Path | None
    console: Path | None
    user: int
    group: int
    console_pty: bool = False


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs) -> ET.Element:
    element = ET.SubElement(parent, tag, {k.rstrip("_"): str(v) for k, v in attrs.items()})
    if text is not None:
        element.text = str(text)
    return element


def _os(domain: ET.Element, spec: MachineSpec, files: DomainFiles) -> None:
    os_ = _sub(domain, "os")
    _sub(os_, "type", "hvm", arch="x86_64", machine="pc")
    _sub(os_, "kernel", files.kernel)
    _sub(os_, "initrd", files.initramfs)
    _sub(os_, "cmdline", kernel_cmdline(spec))


def _channel(devices: ET.Element, path: Path | None, port: str) -> None:
    channel = _sub(devices, "channel", type="unix")
    _sub(channel, "source", mode="bind", **({"path": path} if path else {}))
    _sub(channel, "target", type="virtio", name=port)


def _devices(domain: ET.Element, spec: MachineSpec, files: DomainFiles) -> None:
    devices = _sub(domain, "devices")
    _sub(devices, "emulator", EMULATOR)
    _sub(devices, "controller", type="usb", model="none")
    if files.console_pty:
        serial = _sub(devices, "serial", type="pty")
    elif files.console:
        serial = _sub(devices, "serial", type="file")
        _sub(serial, "source", path=files.console)
    else:
        serial = _sub(devices, "serial", type="null")
    _sub(serial, "target", port=0)
    _sub(devices, "controller", type="virtio-serial", index=0)
    _channel(devices, files.command_socket, COMMAND_PORT)
    _channel(devices, files.ack_socket, ACK_PORT)
    if spec.scsi_controller:
        _sub(devices, "controller", type="scsi", model="virtio-scsi", index=HOTPLUG_CONTROLLER)
    _sub(devices, "memballoon", model="none")


def passthrough_args(spec: MachineSpec) -> list[str]:
    """The QEMU arguments of the disks and the payload, as the QEMU backend gives them."""
    buses = {d.bus for d in spec.disks}
    if len(buses) > 1:
        raise ValueError("all disks of a machine share one controller")
    args: list[str] = []
    if Bus.AHCI in buses:
        args += ["-device", f"ich9-ahci,id=ahci,{_pci('ahci')}"]
    if Bus.SCSI in buses:
        args += ["-device", f"virtio-scsi-pci,id=scsi,{_pci('scsi')}"]
    for i, disk in enumerate(spec.disks):
        args += disk_args(i, disk)
    if spec.payload:
        args += ["-blockdev", f"driver=file,node-name=payload-file,filename={escape(spec.payload)},read-only=on",
                 "-blockdev", "driver=raw,node-name=payload,file=payload-file,read-only=on",
                 "-device", f"virtio-blk-pci,drive=payload,serial=payload,{_pci('payload')}"]
    return args


def domain_xml(spec: MachineSpec, name: str, accel: Accel, files: DomainFiles) -> str:
    if accel is Accel.AUTO:
        raise ValueError("resolve the accelerator before building the domain")
    if spec.interactive:
        raise ValueError("an interactive guest needs the qemu backend (its console is the terminal)")
    if spec.scsi_controller and any(d.bus is not Bus.SCSI for d in spec.disks):
        raise ValueError("a machine with the virtio-scsi controller has only SCSI disks")
    ET.register_namespace("qemu", QEMU_NS)
    domain = ET.Element("domain", type="kvm" if accel is Accel.KVM else "qemu")
    _sub(domain, "name", name)
    _sub(domain, "memory", spec.memory_mib, unit="MiB")
    _sub(domain, "vcpu", spec.cpus)
    _os(domain, spec, files)
    _sub(domain, "cpu", mode="host-passthrough" if accel is Accel.KVM else "maximum")
    _sub(domain, "clock", offset="utc")
    for event in ("on_poweroff", "on_reboot", "on_crash"):
        _sub(domain, event, "destroy")
    _devices(domain, spec, files)
    seclabel = _sub(domain, "seclabel", type="static", model="dac", relabel="no")
    _sub(seclabel, "label", f"+{files.user}:+{files.group}")
    args = passthrough_args(spec)
    if args:
        commandline = _sub(domain, f"{{{QEMU_NS}}}commandline")
        for arg in args:
            _sub(commandline, f"{{{QEMU_NS}}}arg", value=arg)
    ET.indent(domain)
    return ET.tostring(domain, encoding="unicode") + "\n"
