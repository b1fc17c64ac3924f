"""A backend without QEMU, for testing what drives guests (the checker, the recorder).

Each guest the backend creates follows the next `Plan` given to it: it boots or raises
LaunchError, streams scripted ack lines, and dies after a number of commands. It answers the
commands the lab sends: the checker's disk listing and `pp-check` (with the report
images/check.sh prints and the oracle's file after it, for an `Outcome` that the test decides per disk image), the
testbed's `readlink`, and anything else with success and no output.

    backend = FakeBackend([Plan(dies_after=3), Plan()], outcome_of=lambda image: Outcome())
    rig = Rig(image=None, accel=Accel.TCG, backend=backend)
"""

import hashlib
import io
import shlex
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from plugpull.errors import GuestError, GuestTimeout, LaunchError
from plugpull.guest.contract.backend import AttachedDisk
from plugpull.guest.contract.channel import GuestResult, StampedLine, quote_command
from plugpull.guest.contract.config import Accel, DiskSpec, MachineSpec


@dataclass(frozen=True)
class Outcome:
    """What pp-check finds on one disk: the recovery mount's and fsck's exit codes, and the
    files under the mount (path -> contents) that the oracle gets back."""

    mount_rc: int = 0
    fsck_rc: int = 0
    files: dict = field(default_factory=dict)
    umount_rc: int = 0

    def report(self, collect: str) -> str:
        lines = [f"mount_rc={self.mount_rc}"]
        if self.mount_rc == 0:
            status = self.files.get("check-script.rc", b"0").decode() if collect == "script" else "0"
            lines += ["collect_rc=skipped" if collect == "none" else f"collect_rc={status}",
                      f"umount_rc={self.umount_rc}"]
        mount_error = "" if self.mount_rc == 0 else "mount: /mnt/check: wrong fs type, bad superblock"
        blob = {"tar": self.tar(), "sums": self.sums().encode()}.get(collect, b"") if self.mount_rc == 0 else b""
        lines += [f"fsck_rc={self.fsck_rc}"] + ([f"blob_bytes={len(blob)}"] if blob else [])
        lines += ["---fsck", "---mount", mount_error, "---dmesg"]
        return ("\n".join(lines) + "\n").encode() + blob

    def many_parts(self, collect: str, fsck: bool = True) -> list[bytes]:
        """What `pp-check --many` keeps of this state: key=value lines, fsck output, mount
        error, kernel log and the oracle's file (without `fsck`: no fsck_rc line)."""
        text, _, blob = self.report(collect).partition(b"---fsck\n")
        dropped = (b"blob_bytes=",) if fsck else (b"blob_bytes=", b"fsck_rc=")
        keys = b"".join(line + b"\n" for line in text.splitlines() if not line.startswith(dropped))
        mount = b"" if self.mount_rc == 0 else b"mount: /mnt/check: wrong fs type, bad superblock\n"
        blob = {"tar": self.tar(), "sums": self.sums().encode()}.get(collect, b"") if self.mount_rc == 0 else b""
        return [keys, b"", mount, b"", blob]

    def tar(self) -> bytes:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as tar:
            for path, data in self.files.items():
                info = tarfile.TarInfo(path)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return out.getvalue()

    def sums(self) -> str:
        return "".join(f"{hashlib.sha256(data).hexdigest()}  {path}\n" for path, data in self.files.items())


@dataclass(frozen=True)
class Plan:
    """One guest's behaviour. `dies_after`: commands answered before it dies (None: never);
    with `hangs`, the next command times out instead and the guest stays up. `console` is
    what its kernel prints on its console as it dies or hangs; without `dies_after`, once its
    ack lines have run out (what a recorder reads when the acks stop).
    `ack_lines` are streamed on the ack port; then it closes if `acks_end`, else stays quiet.
    `io_error`: the host I/O error the guest reports being paused on (BLOCK_IO_ERROR's data)."""

    boots: bool = True
    dies_after: int | None = None
    hangs: bool = False
    console: str = ""
    ack_lines: tuple[str, ...] = ()
    acks_end: bool = False
    io_error: dict | None = None


def kernel_name(index: int) -> str:
    """sda, sdb, ... sdz, sdaa: the kernel's names for SCSI disks in probe order."""
    letters, n = "", index + 1
    while n:
        n, r = divmod(n - 1, 26)
        letters = chr(ord("a") + r) + letters
    return f"sd{letters}"


class FakeAcks:
    def __init__(self, lines: tuple[str, ...], ends: bool, run_out: Callable[[], None] = lambda: None):
        self._pending = list(lines)
        self._ends = ends
        self._run_out = run_out
        self._stamp: Callable[[], object] = lambda: None
        self.lines: list[StampedLine] = []

    def set_stamp(self, stamp: Callable[[], object]) -> None:
        self._stamp = stamp

    def end(self) -> None:
        self._pending, self._ends = [], True

    def get(self, timeout: float | None = None) -> StampedLine | None:
        if self._pending:
            line = StampedLine(self._stamp(), time.monotonic(), self._pending.pop(0))
            self.lines.append(line)
            return line
        self._run_out()
        self._run_out = lambda: None
        if self._ends:
            return None
        time.sleep(min(timeout or 0.01, 0.01))
        raise GuestTimeout("no line on the stream in time")

    def drain(self) -> list[StampedLine]:
        out = []
        while self._pending:
            out.append(self.get())
        return out


class FakeGuest:
    def __init__(self, spec: MachineSpec, plan: Plan, outcome_of: Callable[[Path], Outcome], accel: Accel,
                 console_log: Path | None, name: str):
        self.spec, self.plan, self.accel, self.console_log, self.name = spec, plan, accel, console_log, name
        self.boot_seconds: float | None = None
        self.acks: FakeAcks | None = None
        self.commands: list[str] = []
        self.files: dict[str, bytes] = {}
        self.power_was_cut = False
        self._outcome_of = outcome_of
        self._disks = [d.path for d in spec.disks]
        self._booted = self._gone = False
        self._last: tuple[Outcome, str] | None = None
        self._read: dict[int, Outcome] = {}  # what the guest's cache holds of a disk it read (`pp-check --many`)

    def __enter__(self) -> "FakeGuest":
        if not self.plan.boots:
            self._gone = True
            raise LaunchError("guest did not become ready: fake guest never boots", ["fake"], 1, "no console")
        self._booted, self.boot_seconds = True, 0.0
        self.acks = FakeAcks(self.plan.ack_lines, self.plan.acks_end,
                             lambda: self._print(self.plan.console if self.plan.dies_after is None else ""))
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def alive(self) -> bool:
        return self._booted and not self._gone

    def io_error(self) -> dict | None:
        return self.plan.io_error

    def run(self, command: str, *args, timeout: float | None = 120.0) -> GuestResult:
        if self.alive() and self.plan.dies_after is not None and len(self.commands) >= self.plan.dies_after:
            self._print(self.plan.console)
            if self.plan.hangs:
                raise GuestTimeout("the guest did not answer in time")
            self._die()
        if not self.alive():
            raise GuestError("guest channel closed (the VM is gone)")
        text = quote_command(command, *args)
        self.commands.append(text)
        out = self._answer(text)
        return GuestResult(text, 0, out.encode() if isinstance(out, str) else out, b"")

    def _answer(self, text: str) -> str | bytes:
        if text.startswith("cd /dev && for l in pp-disk"):
            return "".join(f"{i} {kernel_name(i)}\n" for i in range(len(self._disks)))
        if text.startswith("readlink /dev/pp-disk"):
            return kernel_name(int(text.removeprefix("readlink /dev/pp-disk"))) + "\n"
        if "pp-check --many " in text:
            before, _, many = text.partition("pp-check --many ")
            self._forget(before)
            return self._many(shlex.split(many))
        if "pp-check " in text:
            _, _, dev, _, collect, *_ = shlex.split(text[text.index("pp-check "):].split(";", 1)[0])
            index = [kernel_name(i) for i in range(len(self._disks))].index(dev.removeprefix("/dev/"))
            self._last = (self._outcome_of(self._disks[index]), collect)
            return self._last[0].report(collect)
        if text == "cat /tmp/check.tar" and self._last:
            return self._last[0].tar()
        if text == "cat /tmp/check.sums" and self._last:
            return self._last[0].sums()
        if text == "cat /tmp/check.script" and self._last:  # a user's check script: its output
            return self._last[0].files.get("check-script.out", b"")
        return ""

    def _forget(self, shell: str) -> None:
        """`blockdev --flushbufs` of the disks a `for d in NAMES; do` loop names: their cache dropped."""
        if "blockdev --flushbufs" in shell and shell.startswith("for d in "):
            names = shell.removeprefix("for d in ").partition("; do")[0].split()
            for index in range(len(self._disks)):
                if kernel_name(index) in names:
                    self._read.pop(index, None)

    def _many(self, words: list[str]) -> bytes:
        """pp-check --many's answer: `wc -c` of every state's files, ---data, their bytes. A
        disk read before and not forgotten since answers from the guest's cache, as a kernel's
        page cache would."""
        fsck = words[0] != "--no-fsck"
        collect, luns = words[3 - fsck], [int(w) for w in words[4 - fsck:]]
        for lun in luns:
            if lun not in self._read:
                self._read[lun] = self._outcome_of(self._disks[lun])
        parts = [p for lun in luns for p in self._read[lun].many_parts(collect, fsck)]
        sizes = "".join(f"{len(p)} /tmp/pp-many.{i}\n" for i, p in enumerate(parts))
        return (sizes + f"{sum(map(len, parts))} total\n---data\n").encode() + b"".join(parts)

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        self.run(": write %s", path)
        self.files[path] = data.encode() if isinstance(data, str) else bytes(data)

    def attach_disk(self, disk: DiskSpec, wait: bool = True) -> AttachedDisk:
        self.run(": attach %s", disk.path)
        self._disks.append(disk.path)
        index = len(self._disks) - 1
        return AttachedDisk(f"fake{index}", f"plugpull{index}", kernel_name(index))

    def detach_disk(self, disk: AttachedDisk, wait: bool = True) -> None:
        self.run(": detach %s", disk.handle)

    def _print(self, text: str) -> None:
        if text and self.console_log:
            with open(self.console_log, "a") as f:
                f.write(text)

    def _die(self) -> None:
        self._gone = True
        if self.acks:
            self.acks.end()

    def power_cut(self) -> None:
        self.power_was_cut = True
        self._die()

    def close(self) -> None:
        self._die()


class FakeBackend:
    name = "fake"

    def __init__(self, plans=(), outcome_of: Callable[[Path], Outcome] = lambda image: Outcome()):
        self.plans = list(plans)
        self.outcome_of = outcome_of
        self.guests: list[FakeGuest] = []
        self._lock = threading.Lock()

    def machine(self, spec: MachineSpec, image, accel: Accel, *, console_log: Path | None = None,
                name: str | None = None, boot_timeout: float = 120.0) -> FakeGuest:
        with self._lock:
            plan = self.plans.pop(0) if self.plans else Plan()
            guest = FakeGuest(spec, plan, self.outcome_of, accel, console_log, name or "fake")
            self.guests.append(guest)
        return guest
