"""Acks, what a crash state owes them, and the verdict on a state.

An ack is stamped with the write log's size at the moment the host read it. Why a stamp is
never earlier than the flush that made the operation durable: the workload writes its ack
only after fsync returned; fsync returned only after the disk completed the FLUSH; QEMU's
blklogwrites appends the FLUSH entry to the log after the flush finished and before it
completes the request to the guest. So when the ack line reaches the host, the FLUSH entry
(and every write it covers) already lies below the log size the host reads. A state cut at
entry count `cut` therefore owes every ack whose stamp covers at most `cut` entries.
"""

import io
import tarfile
from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field
from enum import StrEnum

from plugpull.testbed.fs import Filesystem


class Verdict(StrEnum):
    CLEAN = "clean"
    DATA_LOSS = "data-loss"
    INCONSISTENT = "inconsistent"  # a state the application could never have been in
    NOT_WRITABLE = "not-writable"  # mounted, but a new name could not be made (the step after recovery)
    FS_CORRUPT = "fs-corrupt"
    UNMOUNTABLE = "unmountable"
    KERNEL_CRASH = "kernel-crash"  # the kernel under test panicked, oopsed or hung on the state
    INFRA_ERROR = "infra-error"
    # device faults (plugpull.faults): judged by what the application was told
    ERROR_REPORTED = "error-reported"
    SILENT_LOSS = "silent-loss"
    FS_SHUTDOWN = "fs-shutdown"


FAULT_VERDICTS = (Verdict.ERROR_REPORTED, Verdict.SILENT_LOSS, Verdict.FS_SHUTDOWN)
POWER_CUT_VERDICTS = tuple(v for v in Verdict if v not in FAULT_VERDICTS)  # a crash state's


@dataclass(frozen=True)
class Ack:
    """`others`: the positions in the other recorded disks' logs (disk 2, 3...), read at the
    same moment; `position2` (a record from before N disks) is the second disk's alone."""

    ident: int
    stamp: int  # write-log size in bytes when the host read the ack
    position: int  # entries complete in the log at that size
    position2: InitVar[int | None] = None
    kind: str = "ack"  # "ack": a durability promise; "commit": acknowledged, not promised
    others: tuple[int, ...] = ()

    def __post_init__(self, position2):
        others = tuple(self.others) or (() if position2 is None else (position2,))
        object.__setattr__(self, "others", others)


def required_acks(acks: list[Ack], cut: int, others: int | Sequence[int] | None = None,
                  kind: str = "ack") -> list[int]:
    """The acks of `kind` a state cut at `cut` owes. With more disks, a state cut at `cut` and
    `others` (the other logs' cuts; an int for one) owes an ack only if every log had reached
    the ack's position in it."""
    others = (others,) if isinstance(others, int) else tuple(others or ())
    return [a.ident for a in acks if a.kind == kind and a.position <= cut
            and all(p <= c for p, c in zip(a.others, others))]


@dataclass(frozen=True)
class Observation:
    """What the checker guest saw on one crash state."""

    mount_rc: int
    fsck_rc: int | None  # None: fsck was not run on the state (`hunt --fsck`), never clean
    umount_rc: int | None = None
    files: dict | None = None  # path -> contents (collect=tar) or sha256 hex (collect=sums)
    collect_rc: str | None = None
    mount_error: str = ""
    fsck_output: str = ""
    kernel_log: str = ""
    infra_error: str = ""
    kernel_crash: str = ""  # the kernel under test failed on the state: what it said, in a line
    kernel_excerpt: str = ""  # and the console or kernel log lines around it
    create_error: str = ""  # the step after recovery failed: its first error ("": made, or not tried)


def sums_of(text: str) -> dict[str, str]:
    """`sha256sum` output -> {path: hex}."""
    out = {}
    for line in text.splitlines():
        digest, _, path = line.partition("  ")
        if path:
            out[path] = digest
    return out


def files_of(tar_bytes: bytes | None) -> dict[str, bytes]:
    """Regular files of a tar stream; a truncated stream yields what could be read."""
    files: dict[str, bytes] = {}
    if not tar_bytes:
        return files
    try:
        with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
            for member in tar:
                if member.isfile():
                    f = tar.extractfile(member)
                    files[member.name] = f.read() if f else b""
    except (tarfile.TarError, EOFError, OSError):
        pass
    return files


@dataclass(frozen=True)
class StateVerdict:
    verdict: Verdict
    reason: str
    lost: list = field(default_factory=list)
    broken: list = field(default_factory=list)  # the workload's invariants the state broke
    allowed: int = 0  # acknowledged operations lost as the workload's contract allows


def fsck_of(fs: Filesystem, obs: Observation) -> str:
    """'clean', 'damage', 'failed' (the checker itself did not work) or 'not run'."""
    return "not run" if obs.fsck_rc is None else fs.fsck_meaning(obs.fsck_rc)


def first_finding(fs: Filesystem, obs: Observation, mount: str) -> tuple[Verdict, str] | None:
    """What every check looks at before the files, worst first: the guest kernel failed, the
    harness failed, the `mount` failed, or fsck did not run (a harness failure too)."""
    if obs.kernel_crash:
        return Verdict.KERNEL_CRASH, obs.kernel_crash
    if obs.infra_error:
        return Verdict.INFRA_ERROR, obs.infra_error
    if obs.mount_rc != 0:
        return Verdict.UNMOUNTABLE, f"{mount} failed: {obs.mount_error.strip()[:300]}"
    if fsck_of(fs, obs) == "failed":
        return Verdict.INFRA_ERROR, f"{fs.fsck} failed to run (rc={obs.fsck_rc})"
    return None


def classify(fs: Filesystem, obs: Observation, workload, required: list[int],
             committed: list[int] = ()) -> StateVerdict:
    """The verdict on one state. A failure of the checker itself is an infra-error, never a
    filesystem verdict; otherwise the worst finding wins: kernel-crash, unmountable, fs-corrupt,
    not-writable, inconsistent, data-loss. `committed`: acknowledged operations the contract does not
    promise (see `Workload.examine`)."""
    first = first_finding(fs, obs, "recovery mount")
    if first is not None:
        return StateVerdict(*first)
    fsck = fsck_of(fs, obs)
    found = workload.examine(required, obs.files or {}, committed)
    lost, kept = found.lost, {"broken": found.broken, "allowed": found.allowed}
    if fsck == "damage":
        return StateVerdict(Verdict.FS_CORRUPT, f"{fs.fsck} found damage (rc={obs.fsck_rc})", lost, **kept)
    if obs.umount_rc not in (0, None):
        return StateVerdict(Verdict.FS_CORRUPT, f"unmount after recovery failed (rc={obs.umount_rc})", lost, **kept)
    if obs.create_error:
        return StateVerdict(Verdict.NOT_WRITABLE, f"a new name after recovery: {obs.create_error[:300]}", lost, **kept)
    notes = f"; {found.allowed} acknowledged, not promised, lost as the contract allows" if found.allowed else ""
    notes += "; fsck not run" if fsck == "not run" else ""
    if found.broken:
        return StateVerdict(Verdict.INCONSISTENT, f"invariant broken: {found.broken[0]}"
                            + (f" (and {len(found.broken) - 1} more)" if len(found.broken) > 1 else ""), lost, **kept)
    if lost:
        return StateVerdict(Verdict.DATA_LOSS, f"{len(lost)} of {len(required)} acknowledged operations lost{notes}",
                            lost, **kept)
    return StateVerdict(Verdict.CLEAN, f"{len(required)} acknowledged operations intact{notes}", lost, **kept)
