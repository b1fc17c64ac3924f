"""The guest's lookup of a hot-plugged disk by serial (guest/contract/backend.FIND_DISK), run in the
host's sh against a stand-in /sys/block and /dev. No VM."""

import subprocess

from plugpull.guest.contract.backend import FIND_DISK
from plugpull.guest.contract.channel import quote_command


def disk_appearing_on_first_read(tmp_path) -> str:
    """FIND_DISK with no disk there when /sys/block/sd* is first globbed, and the disk
    plugpull0 (sda) appearing at the first serial read or the first wait, whichever comes
    first: the race of a hot-plug that lands mid-lookup."""
    sysfs, dev = tmp_path / "sys", tmp_path / "dev"
    sysfs.mkdir()
    dev.mkdir()
    (dev / "sda").write_bytes(bytes(512))
    appear = (f"mkdir -p {sysfs}/sda/device; [ -e {sysfs}/sda/device/vpd_pg80 ] || "
              f"printf '\\000\\200\\000\\011plugpull0' > {sysfs}/sda/device/vpd_pg80; ")
    command = (FIND_DISK.replace("/sys/block/", f"{sysfs}/").replace("/dev/", f"{dev}/")
               .replace("serial_of() {", "serial_of() { " + appear, 1))
    return quote_command(f"usleep() {{ {appear} }}; {command}", "plugpull0", "present", 2)


def test_a_disk_that_appears_mid_lookup_is_never_named_by_the_unexpanded_glob(tmp_path):
    command = disk_appearing_on_first_read(tmp_path)
    found = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True)
    assert "*" not in found.stdout, "the checker would mount /dev/sd*: a good state looks unmountable"
    assert (found.returncode, found.stdout) == (0, "sda\n")


def test_a_disk_lookup_finds_nothing_when_no_disk_has_the_serial(tmp_path):
    command = disk_appearing_on_first_read(tmp_path).replace("plugpull0'", "plugpull1'", 1)
    found = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True)
    assert (found.returncode, found.stdout) == (1, "")
