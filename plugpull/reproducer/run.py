"""`reproducer --run`: the sh reproducer run in a plugpull guest, on a scratch disk of its own.

The guest boots with one empty disk (AHCI, write cache on); the script goes in through the
command channel and runs as `sh SCRIPT DISK`. Its last `PASS` or `FAIL:` line
is the verdict; anything else (a missing tool, a step that failed, no verdict line) is a
harness failure, never a filesystem verdict."""

import shutil
from dataclasses import dataclass

from plugpull.errors import InfraError
from plugpull.guest.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.machine import create_disk
from plugpull.paths import make_tempdir

DISK_MIB = 512  # xfs needs 300 MiB at least; btrfs and ext4 fit too
GUEST_SCRIPT = "/tmp/reproducer.sh"
GUEST_DISK = "$(readlink -f /dev/pp-disk0)"  # the guest's link to its first disk
TIMEOUT = 900.0


@dataclass(frozen=True)
class Outcome:
    passed: bool
    lines: tuple[str, ...]  # the script's PASS or FAIL lines


def verdict_of(rc: int, stdout: str, stderr: str) -> Outcome:
    """The script's verdict; InfraError when it gave none (exit 2 or 3, or no verdict line)."""
    lines = tuple(line for line in stdout.splitlines() if line == "PASS" or line.startswith("FAIL:"))
    if rc == 0 and lines[-1:] == ("PASS",):
        return Outcome(True, lines)
    if rc == 1 and lines and lines[-1].startswith("FAIL:"):
        return Outcome(False, lines)
    said = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1]
    raise InfraError(f"the reproducer gave no verdict (exit {rc}): {said}")


def run_in_guest(rig, text: str) -> Outcome:
    """Boot a guest of `rig` with a scratch disk, run the sh reproducer `text` on it."""
    work = make_tempdir("reproducer")
    try:
        disk = DiskSpec(create_disk(work / "sda.img", DISK_MIB), Bus.AHCI, True)
        with rig.machine(MachineSpec(disks=(disk,), accel=rig.accel), name="reproducer") as m:
            m.write_file(GUEST_SCRIPT, text, 0o755)
            result = m.run(f"sh %s {GUEST_DISK}", GUEST_SCRIPT, timeout=TIMEOUT)
        return verdict_of(result.rc, result.text, result.stderr.decode(errors="replace"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
