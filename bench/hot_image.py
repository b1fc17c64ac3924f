"""A small fresh image plugged into one hot checker guest, for the benches that time what a
state's check costs inside the guest (floor.py, recovery_step.py)."""

from contextlib import contextmanager
from pathlib import Path

from plugpull.check.hotguest import HotGuest
from plugpull.check.statecheck import state_disk
from plugpull.hunt.hunter import DISK_MIB
from plugpull.hunt.record import formatted
from plugpull.testbed.fs import filesystem, mode as mode_named


@contextmanager
def hot_image(rig, fs_name: str, scratch: Path):
    """Yields (filesystem, image, machine, device): `fs_name` formatted with barriers at the
    hunt's disk size under `scratch`, attached to a hot checker guest that is closed after."""
    fs = filesystem(fs_name)
    image = formatted(fs, mode_named("barrier"), DISK_MIB.get(fs.mount_type, 64), scratch / f"{fs_name}.img")
    guest = HotGuest(rig, set())
    try:
        m = guest.machine
        yield fs, image, m, m.attach_disk(state_disk(image), wait=True).device
    finally:
        guest.close()
