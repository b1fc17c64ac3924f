"""Golden files of the libvirt domain XML, one per bus and cache (and the recorder, the
payload, the checker and hot-plug shapes): a dropped write-cache= or recorder shows up here
without booting anything. Regenerate with PLUGPULL_REGEN_GOLDEN=1."""

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from plugpull.guest.contract.config import Accel, Bus, DiskSpec, MachineSpec
from plugpull.guest.libvirt.domain import QEMU_NS, DomainFiles, domain_xml
from plugpull.guest.libvirt import devices as libvirt_devices

GOLDEN = Path(__file__).parents[2] / "golden"
FILES = DomainFiles(Path("/work/kernel"), Path("/work/initramfs"), Path("/work/cmd.sock"),
                    Path("/work/ack.sock"), Path("/work/console.log"), 64055, 107)


def disk(bus, wc, log=False, host_flush=True):
    return DiskSpec(Path("/work/disk0.img"), bus, wc, host_flush, Path("/work/disk0.log") if log else None)


CASES = {f"{bus}-wc{int(wc)}": MachineSpec(disks=(disk(bus, wc),)) for bus in Bus for wc in (True, False)}
CASES["ahci-wc1-log"] = MachineSpec(disks=(disk(Bus.AHCI, True, log=True, host_flush=False),))
CASES["ide-wc0-log"] = MachineSpec(disks=(disk(Bus.IDE, False, log=True),))
CASES["ahci-wc1-payload"] = MachineSpec(disks=(disk(Bus.AHCI, True),), payload=Path("/work/tree.tar"))
CASES["scsi-checker"] = MachineSpec(disks=tuple(
    DiskSpec(Path(f"/work/state{i}.img"), Bus.SCSI, True, host_flush=False, snapshot=True) for i in range(2)))
CASES["scsi-hotplug"] = MachineSpec(scsi_controller=True)
CASES["nodisk-kvm"] = MachineSpec()
# a guest on a host reached only through its connection: volumes, channels and a pty console opened by libvirt
REMOTE_FILES = DomainFiles(Path("/var/tmp/pool/kernel"), Path("/var/tmp/pool/initramfs"), None, None, None,
                           64055, 107, console_pty=True)
CASES["scsi-hotplug-remote"] = MachineSpec(scsi_controller=True, payload=Path("/var/tmp/pool/1-tree.tar"))


def render(name: str) -> str:
    accel = Accel.KVM if name.endswith("kvm") else Accel.TCG
    return domain_xml(CASES[name], f"plugpull-{name}", accel, REMOTE_FILES if name.endswith("remote") else FILES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_domain_matches_golden(name):
    text = render(name)
    path = GOLDEN / f"{name}.xml"
    if os.environ.get("PLUGPULL_REGEN_GOLDEN"):
        path.write_text(text)
    assert path.is_file(), f"no golden file {path.name}: run with PLUGPULL_REGEN_GOLDEN=1"
    assert text == path.read_text()


def qemu_args(text: str) -> list[str]:
    root = ET.fromstring(text)
    return [a.get("value") for a in root.iter(f"{{{QEMU_NS}}}arg")]


@pytest.mark.parametrize("bus", Bus)
@pytest.mark.parametrize("wc", [True, False])
def test_the_guest_visible_cache_reaches_the_device(bus, wc):
    args = qemu_args(domain_xml(MachineSpec(disks=(disk(bus, wc),)), "d", Accel.TCG, FILES))
    devices = [args[i + 1] for i, a in enumerate(args) if a == "-device" and "drive=disk0" in args[i + 1]]
    assert len(devices) == 1
    assert f"write-cache={'on' if wc else 'off'}" in devices[0]


def test_the_recorder_goes_through_the_qemu_commandline():
    args = qemu_args(domain_xml(CASES["ahci-wc1-log"], "d", Accel.TCG, FILES))
    recorder = [a for a in args if a.startswith("driver=blklogwrites")]
    assert recorder == ["driver=blklogwrites,node-name=disk0,file=disk0-data,log=disk0-logfile,log-sector-size=512"]


def test_the_domain_relabels_nothing_and_runs_unprivileged():
    root = ET.fromstring(render("ahci-wc1"))
    seclabel = root.find("seclabel")
    assert (seclabel.get("model"), seclabel.get("relabel")) == ("dac", "no")
    assert seclabel.findtext("label") == "+64055:+107"


def test_channels_are_unix_sockets_the_host_connects_to():
    root = ET.fromstring(render("nodisk-kvm"))
    channels = {c.find("target").get("name"): c.find("source").attrib for c in root.iter("channel")}
    assert channels == {"plugpull.cmd": {"mode": "bind", "path": "/work/cmd.sock"},
                        "plugpull.ack": {"mode": "bind", "path": "/work/ack.sock"}}


@pytest.mark.parametrize("spec, message", [
    (MachineSpec(interactive=True), "interactive"),
    (MachineSpec(disks=(disk(Bus.AHCI, True), disk(Bus.IDE, True))), "one controller"),
    (MachineSpec(disks=(disk(Bus.AHCI, True),), scsi_controller=True), "only SCSI"),
])
def test_a_domain_the_backends_cannot_share_is_refused(spec, message):
    with pytest.raises(ValueError, match=message):
        domain_xml(spec, "d", Accel.TCG, FILES)


def test_auto_is_resolved_before_the_domain_is_built():
    with pytest.raises(ValueError, match="resolve"):
        domain_xml(MachineSpec(), "d", Accel.AUTO, FILES)


@pytest.mark.parametrize("unit, name", [(0, "sda"), (25, "sdz"), (26, "sdaa"), (27, "sdab"), (701, "sdzz")])
def test_target_names_count_like_the_kernel(unit, name):
    assert libvirt_devices.target_name(unit) == name


@pytest.mark.parametrize("wc, host_flush, mode", [(True, True, "writeback"), (True, False, "unsafe"),
                                                   (False, True, "writethrough")])
def test_cache_modes(wc, host_flush, mode):
    assert libvirt_devices.cache_mode(DiskSpec(Path("/x"), Bus.SCSI, wc, host_flush)) == mode


def test_a_hot_plugged_state_is_an_overlay_over_the_file_read_only():
    state = DiskSpec(Path("/work/state.img"), Bus.SCSI, True, host_flush=False, snapshot=True)
    root = ET.fromstring(libvirt_devices.disk_xml(state, 3, "sdd", Path("/work/sdd.qcow2")))
    assert root.find("source").get("file") == "/work/sdd.qcow2"
    assert root.find("backingStore/source").get("file") == "/work/state.img"
    assert root.find("driver").attrib == {"name": "qemu", "type": "qcow2", "cache": "unsafe"}
    assert root.findtext("serial") == "plugpull3"
    assert root.find("address").get("unit") == "3"
    with pytest.raises(ValueError, match="overlay"):
        libvirt_devices.disk_xml(state, 3, "sdd")
