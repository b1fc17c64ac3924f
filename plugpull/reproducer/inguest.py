"""`reproducer --run`: the sh reproducer run in a plugpull guest, on a scratch disk of its own.

The guest boots with one empty disk (AHCI, write cache on); the script goes in through the
command channel and runs as `sh SCRIPT DISK`. Its last `PASS` or `FAIL:` line is the verdict.
The guest kernel failing (a panic, an oops, a BUG on its console) is a verdict too, FAIL, the
worst one. Anything else (a missing tool, a step that failed, no verdict line) is a harness
failure, never a filesystem verdict."""

import shutil
from dataclasses import dataclass
from pathlib import Path

from plugpull.check.console import scan
from plugpull.errors import GuestError, InfraError
from plugpull.guest.contract.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import create_disk
from plugpull.paths import make_tempdir

DISK_MIB = 512  # xfs needs 300 MiB at least; btrfs and ext4 fit too
GUEST_SCRIPT = "/tmp/reproducer.sh"
GUEST_DISK = "$(readlink -f /dev/pp-disk0)"  # the guest's link to its first disk
TIMEOUT = 900.0


@dataclass(frozen=True)
class Outcome:
    passed: bool
    lines: tuple[str, ...]  # the script's PASS or FAIL lines
    kernel: str | None = None  # what the guest kernel did when it failed (a panic, an oops), else None


def verdict_of(rc: int, stdout: str, stderr: str, console: str = "") -> Outcome:
    """The script's verdict, or the kernel's if it failed; InfraError when there is none
    (exit 2 or 3, or no verdict line)."""
    lines = tuple(line for line in stdout.splitlines() if line == "PASS" or line.startswith("FAIL:"))
    trouble = scan(console)
    if trouble is not None:
        return Outcome(False, (*(line for line in lines if line != "PASS"), f"FAIL: the guest {trouble.summary}"),
                       trouble.summary)
    if rc == 0 and lines[-1:] == ("PASS",):
        return Outcome(True, lines)
    if rc == 1 and lines and lines[-1].startswith("FAIL:"):
        return Outcome(False, lines)
    said = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1]
    raise InfraError(f"the reproducer gave no verdict (exit {rc}): {said}")


def _console(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def run_in_guest(rig, text: str) -> Outcome:
    """Boot a guest of `rig` with a scratch disk, run the sh reproducer `text` on it."""
    work = make_tempdir("reproducer")
    console = work / "console.log"
    try:
        disk = DiskSpec(create_disk(work / "sda.img", DISK_MIB), Bus.AHCI, True)
        try:
            with rig.machine(MachineSpec(disks=(disk,), accel=rig.accel), console_log=console,
                             name="reproducer") as m:
                return run_on(m, text, console)
        except GuestError:
            if scan(_console(console)) is None:
                raise
            return verdict_of(-1, "", "", _console(console))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_on(m, text: str, console: Path) -> Outcome:
    """Run the sh reproducer `text` in the booted guest `m`, on its first disk; `console`:
    the guest's console log, read for a failure of its kernel."""
    m.write_file(GUEST_SCRIPT, text, 0o755)
    result = m.run(f"sh %s {GUEST_DISK}", GUEST_SCRIPT, timeout=TIMEOUT)
    return verdict_of(result.rc, result.text, result.stderr.decode(errors="replace"), _console(console))
