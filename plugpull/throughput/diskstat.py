"""The guest disk's /sys/block/DEV/stat read around each timed step, and the per-phase lines a
benchmark prints itself (pp-smallfiles' `pp-stat N FIELDS`, with PP_STAT set): what the disk
did in each phase, beside how long the phase took."""

import re
from dataclasses import replace

from plugpull.guest.contract.backend import Guest
from plugpull.results import DiskIO, Phase, StatError

STAT_LINE = re.compile(r"^pp-stat (\d+) (.*)$", re.MULTILINE)


def stat_path(device: str) -> str:
    return f"/sys/block/{device}/stat"


def physical_disk(machine: Guest) -> str:
    """The kernel name of the recorded disk itself (sda), under any dm-delay layer: a
    bio-based dm device counts no flushes, the disk under it does."""
    return machine.run("basename $(readlink -f /dev/pp-disk0)").check().text.strip()


def read_stat(machine: Guest, device: str) -> str:
    return machine.run(f"cat {stat_path(device)}").check().text


def with_stat(command: str, device: str) -> str:
    """The step's command with PP_STAT naming the disk's stat file, for a benchmark that reads
    it around its own phases."""
    return f"export PP_STAT={stat_path(device)}; {command}"


def phase_ios(output: str, phases: list[Phase], device: str) -> list[Phase]:
    """`phases` with the io of each, from the `pp-stat N` lines in the benchmark's output
    (line N-1 to line N for phase N); as they were when the output has no such lines. A
    malformed line, or lines that do not cover every phase, is a StatError."""
    lines = {int(n): rest for n, rest in STAT_LINE.findall(output)}
    if not lines:
        return phases
    if sorted(lines) != list(range(len(phases) + 1)):
        raise StatError(f"pp-stat lines {sorted(lines)} do not cover the {len(phases)} phases")
    return [replace(p, io=DiskIO.between(lines[i], lines[i + 1], p.seconds, device))
            for i, p in enumerate(phases)]
