"""What every workload shares: the guest-side names, the base class and its timed `TimedStep`."""

import hashlib
from dataclasses import dataclass, field, fields
from pathlib import Path

DIR = "pp"
ACK_PORT = "/dev/plugpull-ack"
PAYLOAD_DEV = "/dev/vda"


def content_line(kind: str, seed: int, ident: int) -> bytes:
    return f"plugpull {kind} seed={seed} id={ident}".encode()


def repeated(line: bytes, size: int) -> bytes:
    """What `yes LINE | head -c SIZE` writes."""
    unit = line + b"\n"
    return (unit * (size // len(unit) + 1))[:size]


def yes_head(line: bytes, size: int) -> str:
    """The guest command that writes `repeated(line, size)` to its stdout."""
    return f"yes '{line.decode()}' | head -c {size}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Lost:
    ack: int
    reason: str


@dataclass(frozen=True)
class Findings:
    """What a crash state's files say against the workload's contract: `lost`, the broken
    durability promises; `broken`, the broken invariants (a state the application could never
    have been in); `allowed`, acknowledged operations missing as the contract allows."""

    lost: list[Lost] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    allowed: int = 0


@dataclass(frozen=True)
class TimedStep:
    """A timed guest command. `parser` names a parser of its output ("smallfiles", "fio",
    "bonnie") when the command measures its own phases."""

    name: str
    command: str
    ops: int | None = None
    bytes: int | None = None
    parser: str | None = None


class GuestWorkload:
    name = ""
    collect = "tar"
    metadata_heavy = False
    user_supplied = False  # the user's own script: its failures are bad input, not the harness's
    contract = "every ack is a durability promise"
    invariants: tuple[str, ...] = ()  # what must hold of every state, owed acks or not

    def params(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def payload(self) -> Path | None:
        return None

    def setup(self, mnt: str) -> str:
        return ""

    def memory_mib(self) -> int:
        return 1024

    def script(self, mnt: str, ack: str = ACK_PORT) -> str:
        raise NotImplementedError

    def steps(self, mnt: str) -> list[TimedStep]:
        """By default the power-cut script itself, timed, with its acks thrown away."""
        return [TimedStep(self.name, self.script(mnt, ack="/dev/null"), ops=self.ops())]

    def ops(self) -> int | None:
        return None

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        raise NotImplementedError

    def examine(self, required: list[int], files: dict, committed: list[int] = ()) -> Findings:
        """The state against the contract. `required`: the promises (`ack ID` lines) the cut
        owes; `committed`: operations the cut saw acknowledged without a promise (`commit ID`
        lines), which the contract may allow to be lost. By default only the promises."""
        return Findings(self.lost(required, files))


def acked(command: str, ident: int = 1) -> str:
    """`command`, then `ack IDENT` on the ack port (fd 4) once it succeeded; else the script stops."""
    return f"{command} && echo 'ack {ident}' >&4 || exit 2"


def shell_script(mnt: str, ack: str, lines: list[str], echoed: bool = False) -> str:
    """A power-cut script: `lines` run in the work directory with fd 4 open on the ack port;
    with `echoed`, for reading too (the host sends each line back once it has stamped it, and
    a generated program waits for it). Only the port itself is opened so: a FIFO opened for
    reading and writing would not wait for its reader, and what was written before the reader
    came would be lost."""
    opened = f"exec 4<>{ack}" if echoed else f"exec 4>{ack}"
    return "\n".join([f"cd {mnt}/{DIR} || exit 1", opened, *lines]) + "\n"
