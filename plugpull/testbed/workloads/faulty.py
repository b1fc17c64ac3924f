"""Workloads for device faults: each failed system call is written to the ack port as
`error ID SYSCALL ERRNO` (pp-io in the guest), beside the acks, so the host knows what the
application was told. The fault runner (plugpull.faults) creates FAULT_ON when it switched
the fault on and FAULT_OFF when it switched it off."""

from dataclasses import dataclass

from plugpull.testbed.workloads.base import (ACK_PORT, DIR, Findings, GuestWorkload, Lost, content_line, repeated,
                                         shell_script)

FAULT_ON = "/tmp/pp-fault-on"
FAULT_OFF = "/tmp/pp-fault-off"
DIRECT_READ = 4  # fsync-retry's O_DIRECT read-back: its `error` and `wrong` lines carry this ID


def wait_for(path: str, seconds: int) -> str:
    """A guest command that waits until `path` exists, at most `seconds`."""
    return (f"i=0; while [ ! -e {path} ] && [ $i -lt {seconds * 5} ]; do sleep 0.2; i=$((i+1)); done")


@dataclass(frozen=True)
class FsyncRetry(GuestWorkload):
    """The fsyncgate pattern. Op 1: write version 1 of `data`, fsync it and its directory,
    `ack 1`. Then, once the fault is on, op 2: overwrite it in place with version 2 and
    fsync (`ack 2` if that succeeded), read it back from the disk (caches dropped), and again
    with O_DIRECT as op DIRECT_READ (the device's bytes, whatever the page cache holds). If the
    fsync failed, wait for the fault to end and retry it, op 3 (`ack 3` if it succeeded).
    Ack 1 promises version 1 or 2 in full; ack 2 or 3 promises version 2."""

    size_kib: int = 64
    seed: int = 1
    wait: int = 30  # seconds to wait for the fault to come on, and to end
    name = "fsync-retry"
    path = f"{DIR}/data"
    contract = "ack 1 promises version 1 or 2 of the file; ack 2 or 3 (an fsync that succeeded) version 2"

    def line(self, version: int) -> str:
        return content_line(self.name, self.seed, version).decode()

    def content(self, version: int) -> bytes:
        return repeated(self.line(version).encode(), self.size_kib << 10)

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        size = self.size_kib << 10
        v1, v2 = f"'{self.line(1)}' {size}", f"'{self.line(2)}' {size}"
        return shell_script(mnt, ack, [
            f"pp-io write 1 data {v1} && pp-io fsync 1 data && pp-io fsync 1 . && echo 'ack 1' >&4",
            wait_for(FAULT_ON, self.wait),
            f"pp-io write 2 data {v2}",
            "if pp-io fsync 2 data; then echo 'ack 2' >&4; first=ok; else first=failed; fi",
            f"echo 3 > /proc/sys/vm/drop_caches; pp-io read 2 data {v2}; pp-io dread {DIRECT_READ} data {v2}",
            f"if [ $first = failed ]; then {wait_for(FAULT_OFF, self.wait)}; "
            "pp-io fsync 3 data && echo 'ack 3' >&4; fi",
            "exit 0",
        ])

    def version_of(self, files: dict) -> int | None:
        """Which version the file holds in full after the remount, if either."""
        got = files.get(self.path)
        return next((v for v in (1, 2) if got == self.content(v)), None)

    def ops(self) -> int:
        return 3

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        got = files.get(self.path)
        if {2, 3} & set(required) and got != self.content(2):
            ack = 2 if 2 in required else 3
            return [Lost(ack, f"{self.path} {'is missing' if got is None else 'does not hold version 2'} "
                              f"although fsync reported success (ack {ack})")]
        if 1 in required and got not in (self.content(1), self.content(2)):
            return [Lost(1, f"{self.path} holds neither version 1 nor version 2 in full")]
        return []

    def examine(self, required: list[int], files: dict, committed: list[int] = ()) -> Findings:
        return Findings(self.lost(required, files))
