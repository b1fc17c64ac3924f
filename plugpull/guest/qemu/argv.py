"""The QEMU command line, built from frozen specs: a pure function, golden-tested; and QEMU's version."""

import functools
import subprocess
from pathlib import Path

from plugpull.guest.contract.config import Accel, Bus, ChannelFds, DiskSpec, MachineSpec
from plugpull.guest.image.build import GuestImage

QEMU_BINARY = "qemu-system-x86_64"
BOOT_ARGS = ("console=ttyS0", "panic=-1", "quiet", "mitigations=off", "tsc=reliable",
             "no_timer_check", "i8042.noaux", "i8042.nomux", "i8042.nopnp")
BOOT_MODULES = ("virtio_pci", "virtio_console", "sd_mod")
BUS_MODULES = {Bus.AHCI: "ahci", Bus.IDE: "ata_piix", Bus.SCSI: "virtio_scsi"}


def escape(value) -> str:
    """QEMU option values: a comma is written twice."""
    return str(value).replace(",", ",,")


def on_off(flag: bool) -> str:
    return "on" if flag else "off"


def disk_args(index: int, disk: DiskSpec) -> list[str]:
    node = f"disk{index}"
    no_flush = on_off(not disk.host_flush)
    data_node = f"{node}-data" if disk.write_log else node
    if disk.snapshot:
        args = ["-drive", f"if=none,id={node},file={escape(disk.path)},format=raw,snapshot=on,"
                          f"cache.no-flush={no_flush}"]
    else:
        args = [
            "-blockdev", f"driver={'host_device' if disk.host_device else 'file'},node-name={node}-file,"
                         f"filename={escape(disk.path)},cache.no-flush={no_flush}",
            "-blockdev", f"driver=raw,node-name={data_node},file={node}-file",
        ]
    if disk.write_log:
        args += [
            "-blockdev", f"driver=file,node-name={node}-logfile,filename={escape(disk.write_log)},cache.no-flush={no_flush}",
            "-blockdev", f"driver=blklogwrites,node-name={node},file={data_node},log={node}-logfile,log-sector-size=512",
        ]
    cache = f"write-cache={on_off(disk.write_cache)},serial=plugpull{index}"
    if disk.bus is Bus.AHCI:
        device = f"ide-hd,drive={node},bus=ahci.{index},{cache}"
    elif disk.bus is Bus.IDE:
        device = f"ide-hd,drive={node},bus=ide.{index // 2},unit={index % 2},{cache}"
    else:
        device = f"scsi-hd,drive={node},bus=scsi.0,channel=0,scsi-id=0,lun={index},{cache}"
    return args + ["-device", device]


def kernel_cmdline(spec: MachineSpec) -> str:
    modules = list(BOOT_MODULES)
    if spec.disks or spec.scsi_controller:
        modules.append(BUS_MODULES[spec.bus])
    if spec.payload:
        modules.append("virtio_blk")
    args = [*BOOT_ARGS, f"plugpull.modules={','.join(modules)}", f"plugpull.disks={len(spec.disks)}"]
    if spec.interactive:
        args.append("plugpull.shell=1")
    return " ".join([*args, *spec.kernel_args])


def qemu_argv(spec: MachineSpec, image: GuestImage, accel: Accel, fds: ChannelFds,
              console_log: Path | None = None, binary: str = QEMU_BINARY) -> list[str]:
    if accel is Accel.AUTO:
        raise ValueError("resolve the accelerator before building the command line")
    buses = {d.bus for d in spec.disks}
    if len(buses) > 1:
        raise ValueError("all disks of a machine share one controller")
    argv = [
        binary, "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
        "-machine", f"pc,accel={accel}",
        "-cpu", "host" if accel is Accel.KVM else "max",
        "-m", str(spec.memory_mib), "-smp", str(spec.cpus),
        "-kernel", str(image.kernel), "-initrd", str(image.initramfs),
        "-append", kernel_cmdline(spec),
        "-chardev", f"socket,id=qmp,fd={fds.qmp}", "-mon", "chardev=qmp,mode=control",
    ]
    if spec.interactive:
        argv += ["-chardev", "stdio,id=console,signal=off"]
    elif console_log:
        argv += ["-chardev", f"file,id=console,path={escape(console_log)}"]
    else:
        argv += ["-chardev", "null,id=console"]
    argv += [
        "-serial", "chardev:console",
        "-device", "virtio-serial-pci,id=vser",
        "-chardev", f"socket,id=cmd,fd={fds.command}",
        "-device", "virtserialport,bus=vser.0,chardev=cmd,name=plugpull.cmd",
        "-chardev", f"socket,id=ack,fd={fds.ack}",
        "-device", "virtserialport,bus=vser.0,chardev=ack,name=plugpull.ack",
    ]
    if Bus.AHCI in buses:
        argv += ["-device", "ich9-ahci,id=ahci"]
    if spec.scsi_controller and buses - {Bus.SCSI}:
        raise ValueError("a machine with the virtio-scsi controller has only SCSI disks")
    if Bus.SCSI in buses or spec.scsi_controller:
        argv += ["-device", "virtio-scsi-pci,id=scsi"]
    for i, disk in enumerate(spec.disks):
        argv += disk_args(i, disk)
    if spec.payload:
        argv += ["-blockdev", f"driver=file,node-name=payload-file,filename={escape(spec.payload)},read-only=on",
                 "-blockdev", "driver=raw,node-name=payload,file=payload-file,read-only=on",
                 "-device", "virtio-blk-pci,drive=payload,serial=payload"]
    return argv


@functools.cache
def qemu_version() -> str:
    out = subprocess.run([QEMU_BINARY, "--version"], capture_output=True, text=True)
    return out.stdout.split("\n", 1)[0].removeprefix("QEMU emulator version ").strip()
