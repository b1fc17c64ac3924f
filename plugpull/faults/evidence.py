"""Whether corrupted data was caught: "detected" (a checksum error in the kernel log or in a
btrfs scrub, or a read that failed) or "returned wrong data" (a read that succeeded with other
bytes than were written, during the run or after the remount)."""

import re
from dataclasses import dataclass

from plugpull.faults.told import Told

DETECTED = "detected"
WRONG_DATA = "returned wrong data"

# Kernel log lines that say a checksum or a metadata verifier caught bad data.
CHECKSUM_MARKERS = (
    "csum failed",  # btrfs data
    "checksum error",  # btrfs
    "bad tree block",  # btrfs metadata
    "Metadata CRC error",  # xfs
    "Metadata corruption detected",  # xfs
    "checksum invalid",  # ext4 metadata_csum
    "bad block bitmap checksum",  # ext4
)
SCRUB_ERRORS = re.compile(r"^\s*(csum_errors|verify_errors|super_errors|read_errors|uncorrectable_errors):\s*(\d+)",
                          re.MULTILINE)


@dataclass(frozen=True)
class Corruption:
    finding: str = ""  # DETECTED, WRONG_DATA, or "" (no sign of corrupted data)
    evidence: str = ""


def scrub_errors(scrub_output: str) -> int:
    """The error count of `btrfs scrub start -B -R` (0 if it printed none)."""
    return sum(int(n) for _, n in SCRUB_ERRORS.findall(scrub_output))


def checksum_lines(kernel_log: str) -> list[str]:
    return [line.strip() for line in kernel_log.splitlines() if any(m in line for m in CHECKSUM_MARKERS)]


def corruption(told: Told, kernel_log: str, scrub_output: str = "", unreadable_after: bool = False,
               wrong_after: bool = False) -> Corruption:
    """Wrong data returned as success outweighs any detection elsewhere: the application
    that got it had no way to know. `unreadable_after`: collecting the files after the
    remount failed; `wrong_after`: it succeeded and the workload's file held other bytes than
    any version it wrote."""
    if told.wrong or wrong_after:
        where = f"read back during the run: {told.wrong[0]}" if told.wrong else "after the remount"
        return Corruption(WRONG_DATA, f"a read succeeded with other data ({where})")
    found = []
    if lines := checksum_lines(kernel_log):
        found.append(f"kernel: {lines[0][:160]}")
    if errors := scrub_errors(scrub_output):
        found.append(f"btrfs scrub: {errors} errors")
    if failed := [e for e in told.errors if e.syscall == "read"]:
        found.append(f"read {failed[0].name} (op {failed[0].ident})")
    if unreadable_after:
        found.append("reading the files after the remount failed")
    return Corruption(DETECTED, "; ".join(found)) if found else Corruption()
