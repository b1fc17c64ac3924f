"""The verdict after a fault window, from a clean unmount, a remount and fsck (the checker's
Observation), what the application was told, and whether the filesystem gave up."""

from dataclasses import dataclass

from plugpull.check.verdict import Observation, Verdict, first_finding
from plugpull.faults.told import Told
from plugpull.testbed.fs import Filesystem

# What the kernel logs when a filesystem stops writing: (marker, "shutdown" or "read-only").
GAVE_UP = (
    ("Filesystem has been shut down", "shutdown"),  # xfs
    ("shutting down filesystem", "shutdown"),  # xfs
    ("Remounting filesystem read-only", "read-only"),  # ext4
    ("Aborting journal", "read-only"),  # ext4: the journal aborts, the fs turns read-only
    ("forced readonly", "read-only"),  # btrfs
)


def gave_up(kernel_log: str, mount_options: str = "") -> str:
    """"shutdown", "read-only" or "" from the kernel log and the mount's options."""
    for marker, how in GAVE_UP:
        if marker in kernel_log:
            return how
    return "read-only" if mount_options.split(",")[:1] == ["ro"] else ""


@dataclass(frozen=True)
class FaultVerdict:
    verdict: Verdict
    reason: str


def judge(fs: Filesystem, obs: Observation, told: Told, workload, shutdown: str, umount_rc: int = 0) -> FaultVerdict:
    """Worst first: kernel-crash, unmountable, fs-corrupt, silent-loss (success was reported
    and the data is gone or wrong), fs-shutdown, error-reported, clean."""
    first = first_finding(fs, obs, "remount")
    if first is not None:
        return FaultVerdict(*first)
    fsck = fs.fsck_meaning(obs.fsck_rc)
    if umount_rc != 0:
        return FaultVerdict(Verdict.FS_CORRUPT, f"the unmount after the fault failed (rc={umount_rc})")
    if fsck == "damage":
        return FaultVerdict(Verdict.FS_CORRUPT, f"{fs.fsck} found damage after the fault (rc={obs.fsck_rc})")
    lost = workload.examine(sorted(set(told.acks)), obs.files or {}).lost
    if lost:
        unreadable = obs.collect_rc not in (None, "0", "absent", "skipped")
        return FaultVerdict(Verdict.SILENT_LOSS, f"{len(lost)} acknowledged operations lost: {lost[0].reason}"
                            + (f" (unreadable: collecting the files failed, rc {obs.collect_rc})" if unreadable else ""))
    if told.wrong:
        return FaultVerdict(Verdict.SILENT_LOSS, f"a read returned wrong data without an error ({told.wrong[0]})")
    if shutdown:
        return FaultVerdict(Verdict.FS_SHUTDOWN, f"the filesystem {'shut down' if shutdown == 'shutdown' else 'went read-only'}"
                            f" and was consistent after a remount")
    if told.errors:
        first = told.errors[0]
        return FaultVerdict(Verdict.ERROR_REPORTED, f"{len(told.errors)} errors reported (first: {first.syscall} "
                            f"{first.name}); nothing acknowledged was lost")
    return FaultVerdict(Verdict.CLEAN, f"{len(set(told.acks))} acknowledged operations intact, no error reported")
