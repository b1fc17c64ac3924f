"""What the application was told, from its ack-port lines: `ack ID` (a success it relies
on), `error ID SYSCALL ERRNO` (a failed system call), `wrong ID PATH OFFSET` (a read that
returned other data than was written, without an error)."""

import errno
from collections import Counter
from dataclasses import dataclass, field

SYSCALLS = ("write", "fsync", "close")  # the errno columns of the faults table


@dataclass(frozen=True)
class Error:
    ident: int
    syscall: str
    errno: int

    @property
    def name(self) -> str:
        return errno.errorcode.get(self.errno, f"errno {self.errno}")


@dataclass
class Told:
    acks: list[int] = field(default_factory=list)
    arrived: list = field(default_factory=list)  # per ack, when its line reached the host (time.monotonic)
    stamps: list = field(default_factory=list)  # per ack, the write log's size then
    errors: list[Error] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)  # "ID PATH OFFSET"
    exit_code: int | None = None

    def add(self, text: str, arrived: float | None = None, stamp: int | None = None) -> None:
        """One ack-port line; lines of other kinds are not the application's."""
        words = text.split()
        kind, args = (words[0], words[1:]) if words else ("", [])
        if kind == "ack" and len(args) == 1 and args[0].isdigit():
            self.acks.append(int(args[0]))
            self.arrived.append(arrived)
            self.stamps.append(stamp)
        elif kind == "error" and len(args) == 3 and args[0].isdigit() and args[2].isdigit():
            self.errors.append(Error(int(args[0]), args[1], int(args[2])))
        elif kind == "wrong" and len(args) == 3:
            self.wrong.append(" ".join(args))
        elif kind == "done" and len(args) == 1 and args[0].lstrip("-").isdigit():
            self.exit_code = int(args[0])

    def acks_before(self, moment: float) -> list[int]:
        """The acks that reached the host before `moment` (time.monotonic), so were sent before
        it. Not the write log's size: while writes are dropped, the log does not grow."""
        return sorted({a for a, t in zip(self.acks, self.arrived) if t is not None and t < moment})

    def errno_counts(self, syscall: str) -> Counter:
        return Counter(e.name for e in self.errors if e.syscall == syscall)

    def to_json(self) -> dict:
        return {"acks": self.acks, "errors": [[e.ident, e.syscall, e.name] for e in self.errors],
                "wrong": self.wrong, "exit_code": self.exit_code}
