"""libvirt device XML for disks hot-plugged on the native virtio-scsi controller: pure
functions, unit-tested; and the book of what a guest has plugged in.

The disk sits at its own unit (LUN) of controller 0 with the serial `plugpullN` that the
guest finds it by, as with the QEMU backend (`qemu.hotplug`). libvirt's cache modes carry the
guest-visible write cache and whether a flush reaches the host: `writeback` (cache on,
flushes reach the host), `unsafe` (cache on, flushes dropped), `writethrough` (no cache).
"""

import string
import xml.etree.ElementTree as ET
from pathlib import Path

from plugpull.guest.contract.config import DiskSpec
from plugpull.guest.libvirt.domain import HOTPLUG_CONTROLLER
from plugpull.guest.qemu.hotplug import Luns


def serial(unit: int) -> str:
    return f"plugpull{unit}"


def target_name(unit: int) -> str:
    """libvirt's name for the unit-th SCSI disk: sda .. sdz, sdaa, ..."""
    letters = ""
    n = unit + 1
    while n:
        n, rest = divmod(n - 1, 26)
        letters = string.ascii_lowercase[rest] + letters
    return f"sd{letters}"


def cache_mode(disk: DiskSpec) -> str:
    if not disk.write_cache:
        return "writethrough"
    return "writeback" if disk.host_flush else "unsafe"


def disk_xml(disk: DiskSpec, unit: int, target: str, overlay: Path | None = None) -> str:
    """A `<disk>` for attachDeviceFlags: the raw file, or (overlay) a qcow2 over it, read-only."""
    if disk.snapshot and overlay is None:
        raise ValueError("a snapshot disk needs an overlay file")
    element = ET.Element("disk", type="file", device="disk")
    ET.SubElement(element, "driver", name="qemu", type="qcow2" if overlay else "raw", cache=cache_mode(disk))
    ET.SubElement(element, "source", file=str(overlay or disk.path))
    if overlay:
        backing = ET.SubElement(element, "backingStore", type="file")
        ET.SubElement(backing, "format", type="raw")
        ET.SubElement(backing, "source", file=str(disk.path))
    return _addressed(element, unit, target)


def volume_disk_xml(disk: DiskSpec, unit: int, target: str, pool: str, volume: str) -> str:
    """A `<disk>` on a storage volume: a copy of the state uploaded for this guest, so the
    guest may write to it (its `disk.path` is not touched either way)."""
    element = ET.Element("disk", type="volume", device="disk")
    ET.SubElement(element, "driver", name="qemu", type="raw", cache=cache_mode(disk))
    ET.SubElement(element, "source", pool=pool, volume=volume)
    return _addressed(element, unit, target)


def _addressed(element: ET.Element, unit: int, target: str) -> str:
    ET.SubElement(element, "target", dev=target, bus="scsi")
    ET.SubElement(element, "serial").text = serial(unit)
    ET.SubElement(element, "address", type="drive", controller=str(HOTPLUG_CONTROLLER), bus="0",
                  target="0", unit=str(unit))
    ET.indent(element)
    return ET.tostring(element, encoding="unicode") + "\n"


class Plugged:
    """The disks a guest has plugged in: their XML (to unplug them by) and their files."""

    def __init__(self, first_unit: int = 0):
        self._units = Luns(first=first_unit)
        self._unit_of: dict[str, int] = {}
        self._disks: dict[str, tuple[str, list[Path]]] = {}

    def next(self) -> tuple[int, str]:
        unit = self._units.take()
        target = target_name(unit)
        self._unit_of[target] = unit
        return unit, target

    def add(self, target: str, xml: str, files: list[Path]) -> None:
        self._disks[target] = (xml, files)

    def pop(self, target: str) -> tuple[str, list[Path]]:
        self._units.release(self._unit_of.pop(target))
        return self._disks.pop(target)
