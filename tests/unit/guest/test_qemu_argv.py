"""Golden files of the QEMU command line: a dropped write-cache= or cache.no-flush= shows up
here without booting anything. Regenerate with PLUGPULL_REGEN_GOLDEN=1."""

import os
from pathlib import Path

import pytest

from plugpull.guest.contract.config import Accel, Bus, ChannelFds, DiskSpec, MachineSpec
from plugpull.guest.image.build import GuestImage
from plugpull.guest.qemu.argv import kernel_cmdline, qemu_argv

GOLDEN = Path(__file__).parents[2] / "golden"
IMAGE = GuestImage("0123456789abcdef", Path("/cache/kernel"), Path("/cache/initramfs.cpio"), "6.1.0-test")
FDS = ChannelFds(qmp=10, command=11, ack=12)


def disk(bus, wc, log=False, index=0, host_flush=True):
    return DiskSpec(Path(f"/work/disk{index}.img"), bus, wc, host_flush,
                    Path(f"/work/disk{index}.log") if log else None)


CASES = {
    f"{bus}-wc{int(wc)}": MachineSpec(disks=(disk(bus, wc),)) for bus in Bus for wc in (True, False)
}
CASES["ahci-wc1-log"] = MachineSpec(disks=(disk(Bus.AHCI, True, log=True, host_flush=False),))
CASES["ide-wc1-extlog"] = MachineSpec(disks=(disk(Bus.IDE, True), disk(Bus.IDE, True, index=1)))
CASES["ahci-wc1-extlog"] = MachineSpec(disks=(disk(Bus.AHCI, True), disk(Bus.AHCI, False, index=1)))
CASES["nodisk-kvm"] = MachineSpec()
CASES["ahci-wc1-realdisk"] = MachineSpec(disks=(DiskSpec(Path("/dev/sdz"), Bus.AHCI, True, host_device=True),))
CASES["ahci-wc1-payload"] = MachineSpec(disks=(disk(Bus.AHCI, True),), payload=Path("/cache/tree.tar"))
CASES["scsi-checker"] = MachineSpec(disks=tuple(
    DiskSpec(Path(f"/work/state{i}.img"), Bus.SCSI, True, host_flush=False, snapshot=True) for i in range(3)))
CASES["scsi-hotplug"] = MachineSpec(scsi_controller=True)


def render(name: str, spec: MachineSpec) -> str:
    accel = Accel.KVM if name.endswith("kvm") else Accel.TCG
    argv = qemu_argv(spec, IMAGE, accel, FDS, Path("/work/console.log"))
    return "\n".join(argv) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_argv_matches_golden(name):
    text = render(name, CASES[name])
    path = GOLDEN / f"{name}.argv"
    if os.environ.get("PLUGPULL_REGEN_GOLDEN"):
        path.write_text(text)
    assert path.is_file(), f"no golden file {path.name}: run with PLUGPULL_REGEN_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("bus", Bus)
@pytest.mark.parametrize("wc", [True, False])
def test_guest_visible_cache_is_on_the_device(bus, wc):
    argv = qemu_argv(MachineSpec(disks=(disk(bus, wc),)), IMAGE, Accel.TCG, FDS)
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device" and "drive=disk0" in argv[i + 1]]
    assert len(devices) == 1
    assert f"write-cache={'on' if wc else 'off'}" in devices[0]
    where = {Bus.AHCI: "bus=ahci.0", Bus.IDE: "bus=ide.0,unit=0", Bus.SCSI: "bus=scsi.0,channel=0,scsi-id=0,lun=0"}
    assert where[bus] in devices[0]


def test_recorder_sits_between_device_and_image():
    argv = qemu_argv(CASES["ahci-wc1-log"], IMAGE, Accel.TCG, FDS)
    blockdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-blockdev"]
    logwriter = [b for b in blockdevs if b.startswith("driver=blklogwrites")]
    assert logwriter == ["driver=blklogwrites,node-name=disk0,file=disk0-data,log=disk0-logfile,log-sector-size=512"]


def test_disk_driver_loaded_per_bus():
    assert "plugpull.modules=virtio_pci,virtio_console,sd_mod,ahci " in kernel_cmdline(CASES["ahci-wc1"])
    assert "plugpull.modules=virtio_pci,virtio_console,sd_mod,ata_piix " in kernel_cmdline(CASES["ide-wc0"])


def test_a_hotplug_guest_has_the_scsi_controller_and_its_driver_without_disks():
    spec = CASES["scsi-hotplug"]
    argv = qemu_argv(spec, IMAGE, Accel.TCG, FDS)
    assert "virtio-scsi-pci,id=scsi" in argv and not any(a.startswith("scsi-hd") for a in argv)
    assert "sd_mod,virtio_scsi " in kernel_cmdline(spec) and "plugpull.disks=0" in kernel_cmdline(spec)
    assert "virtio-scsi-pci,id=scsi" not in qemu_argv(MachineSpec(), IMAGE, Accel.TCG, FDS)


def test_a_scsi_controller_refuses_disks_of_another_bus():
    with pytest.raises(ValueError):
        qemu_argv(MachineSpec(disks=(disk(Bus.AHCI, True),), scsi_controller=True), IMAGE, Accel.TCG, FDS)


def test_commas_in_paths_are_escaped():
    spec = MachineSpec(disks=(DiskSpec(Path("/a,b/disk.img")),))
    argv = qemu_argv(spec, IMAGE, Accel.TCG, FDS)
    assert any("filename=/a,,b/disk.img," in a for a in argv)


def test_mixed_buses_rejected():
    spec = MachineSpec(disks=(disk(Bus.AHCI, True), disk(Bus.IDE, True, index=1)))
    with pytest.raises(ValueError, match="one controller"):
        qemu_argv(spec, IMAGE, Accel.TCG, FDS)


def test_auto_must_be_resolved_first():
    with pytest.raises(ValueError):
        qemu_argv(MachineSpec(), IMAGE, Accel.AUTO, FDS)


def test_snapshot_disk_cannot_record():
    with pytest.raises(ValueError, match="snapshot"):
        DiskSpec(Path("/x.img"), snapshot=True, write_log=Path("/x.log"))
