"""Writes in flight across a flush, counted from a QEMU trace of the recorded AHCI disk.

The write log is in completion order: blklogwrites appends a request's entry when the
request has completed on the image, and a FLUSH entry when the flush has. A write the
guest issued before a flush but that completed after the flush was issued could therefore
land before the FLUSH entry, and the models would count it as covered by that flush,
although a flush only covers the writes that completed before it was issued. The log alone
cannot show this; the device model's own trace events can:

    process_ncq_command  ... [tag:T]: NCQ op 0xOP on sectors [A,B]   an NCQ command issued
    process_ncq_command_fua ...                                     it carries FUA
    ncq_finish           ... [tag:T]: NCQ transfer finished          it completed
    ide_exec_cmd         ... cmd 0xCC                                 a non-queued command
    ahci_cmd_done        ...                                          a non-queued one completed

(QEMU's `log` trace backend, as `-trace EVENT -D FILE` writes them; lines may carry a
`PID@SECONDS:` prefix.) A write is "in flight across a flush" when it was issued before the
flush command and had not finished when the flush was issued. Writes issued while a flush
is outstanding are counted too: they can also complete, and be logged, before the flush's
entry. The trace must be of one AHCI port (one recorded disk).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

FLUSH_COMMANDS = frozenset({0xE7, 0xEA})
"""ATA FLUSH CACHE and FLUSH CACHE EXT: non-queued commands."""
NCQ_WRITE = 0x61
"""WRITE FPDMA QUEUED."""
PIO_DMA_WRITES = frozenset({0x30, 0x34, 0x39, 0x3D, 0xC5, 0xCA, 0xCE, 0x35})
"""Non-queued writes: WRITE SECTORS (EXT), WRITE MULTIPLE (EXT, FUA EXT), WRITE DMA (EXT, FUA EXT)."""
TRACE_EVENTS = ("process_ncq_command", "process_ncq_command_fua", "ncq_finish", "ide_exec_cmd",
                "ahci_cmd_done")

_LINE = re.compile(r"^(?:\d+@[\d.]+:)?(\w+) (.*)$")
_PORT_TAG = re.compile(r"\)\[(\d+)\]\[tag:(\d+)\]")
_NCQ_OP = re.compile(r"NCQ op (0x[0-9a-fA-F]+)")
_IDE_CMD = re.compile(r"cmd (0x[0-9a-fA-F]+)")


class TraceFormatError(ValueError):
    """The trace is not one this counter can read."""


@dataclass(frozen=True)
class FlushCrossings:
    flushes: int
    """Flush commands the device received."""
    writes: int
    """Write commands the device received, queued or not."""
    crossing_writes: int
    """Writes issued before a flush and still in flight when it was issued."""
    crossed_flushes: int
    """Flushes that had at least one write in flight when they were issued."""
    issued_during_flush: int
    """Writes issued while a flush was outstanding."""
    max_writes_in_flight: int
    """The deepest the queue of writes got: 1 or less means no overlap was ever possible."""
    fua_writes: int

    @property
    def unordered(self) -> int:
        """Writes whose log position may misstate their order against a flush."""
        return self.crossing_writes + self.issued_during_flush

    @property
    def share(self) -> float:
        """unordered as a share of all writes (0.0 when there were none)."""
        return self.unordered / self.writes if self.writes else 0.0


class _Counter:
    def __init__(self):
        self.ports: set[int] = set()
        self.writes_in_flight: set[int] = set()
        self.flush_outstanding = False
        self.flushes = self.writes = self.crossing = self.crossed = 0
        self.during = self.deepest = self.fua = 0

    def ncq_issued(self, rest: str) -> None:
        tag = self._tag(rest)
        op = _NCQ_OP.search(rest)
        if op is None:
            raise TraceFormatError(f"no NCQ op in {rest!r}")
        if int(op.group(1), 16) == NCQ_WRITE:
            self._write_issued()
            self.writes_in_flight.add(tag)
            self.deepest = max(self.deepest, len(self.writes_in_flight))

    def ncq_finished(self, rest: str) -> None:
        self.writes_in_flight.discard(self._tag(rest))

    def command(self, rest: str) -> None:
        cmd = _IDE_CMD.search(rest)
        if cmd is None:
            raise TraceFormatError(f"no command byte in {rest!r}")
        code = int(cmd.group(1), 16)
        if code in FLUSH_COMMANDS:
            self.flushes += 1
            self.crossing += len(self.writes_in_flight)
            self.crossed += bool(self.writes_in_flight)
            self.flush_outstanding = True
        elif code in PIO_DMA_WRITES:
            self._write_issued()
            self.deepest = max(self.deepest, len(self.writes_in_flight) + 1)

    def command_done(self, rest: str) -> None:
        self.flush_outstanding = False

    def _write_issued(self) -> None:
        self.writes += 1
        self.during += self.flush_outstanding

    def _tag(self, rest: str) -> int:
        found = _PORT_TAG.search(rest)
        if found is None:
            raise TraceFormatError(f"no port and tag in {rest!r}")
        self.ports.add(int(found.group(1)))
        if len(self.ports) > 1:
            raise TraceFormatError(f"the trace covers AHCI ports {sorted(self.ports)}; count one disk at a time")
        return int(found.group(2))

    def result(self) -> FlushCrossings:
        return FlushCrossings(self.flushes, self.writes, self.crossing, self.crossed, self.during,
                              self.deepest, self.fua)


def count_crossings(lines: Iterable[str]) -> FlushCrossings:
    """Count flushes and the writes in flight across them, from trace lines in emission order.

    Lines of other events are skipped, so a trace with more events enabled is fine.
    """
    counter = _Counter()
    handlers = {"process_ncq_command": counter.ncq_issued, "ncq_finish": counter.ncq_finished,
                "ide_exec_cmd": counter.command, "ahci_cmd_done": counter.command_done}
    for line in lines:
        match = _LINE.match(line.strip())
        if match is None:
            continue
        event, rest = match.groups()
        if event == "process_ncq_command_fua":
            counter.fua += 1
        elif event in handlers:
            handlers[event](rest)
    return counter.result()
