"""What a disk did during a measured window: the difference of two lines of the guest's
/sys/block/DEV/stat (the kernel's Documentation/block/stat.rst), and the cause figures a
report shows beside a throughput figure."""

import math
from dataclasses import asdict, dataclass

SECTOR = 512  # /sys/block/*/stat counts 512-byte sectors whatever the disk's sector size
STAT_FIELDS = 17  # with the discard (12-15) and flush (16-17) fields, as on Linux 6.1
WRITES, WRITE_SECTORS, FLUSHES, FLUSH_MS = 4, 6, 15, 16  # 0-based field indexes


class StatError(ValueError):
    """A line that is not a /sys/block/DEV/stat line with flush fields."""


def parse_stat(line: str) -> tuple[int, ...]:
    """The 17 counters of a stat line; StatError if it has fewer fields (a kernel without
    flush accounting) or a field that is not a count."""
    parts = line.split()
    if len(parts) < STAT_FIELDS:
        raise StatError(f"a block stat line has {STAT_FIELDS} fields (with the flush fields 16 "
                        f"and 17), this one {len(parts)}: {line.strip()[:120]!r}")
    if not all(p.isdigit() for p in parts[:STAT_FIELDS]):
        raise StatError(f"a block stat field is not a count: {line.strip()[:120]!r}")
    return tuple(int(p) for p in parts[:STAT_FIELDS])


def _number(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return value if ok else None


@dataclass(frozen=True)
class DiskIO:
    """The disk's writes, sectors written, flushes completed and milliseconds spent flushing
    over a window of `seconds`; `device` is the disk's kernel name (the disk under any
    dm-delay layer: only the request-based disk counts flushes)."""

    writes: int
    sectors: int
    flushes: int
    flush_ms: int
    seconds: float | None = None
    device: str | None = None

    @classmethod
    def between(cls, before: str, after: str, seconds: float | None = None,
                device: str | None = None) -> "DiskIO":
        """The window between two stat lines; StatError if either is malformed or a counter
        went backwards (the lines are not of one disk, or it was reset)."""
        a, b = parse_stat(before), parse_stat(after)
        delta = [b[i] - a[i] for i in (WRITES, WRITE_SECTORS, FLUSHES, FLUSH_MS)]
        if min(delta) < 0:
            raise StatError(f"a block stat counter went backwards between {before.strip()[:60]!r} "
                            f"and {after.strip()[:60]!r}")
        return cls(*delta, seconds=seconds, device=device)

    def __add__(self, other: "DiskIO") -> "DiskIO":
        seconds = None if self.seconds is None or other.seconds is None else self.seconds + other.seconds
        return DiskIO(self.writes + other.writes, self.sectors + other.sectors, self.flushes + other.flushes,
                      self.flush_ms + other.flush_ms, seconds, self.device or other.device)

    @property
    def mib(self) -> float:
        return self.sectors * SECTOR / (1 << 20)

    def flushes_per_kop(self, ops: int | None) -> float | None:
        return 1000 * self.flushes / ops if ops else None

    @property
    def mib_per_flush(self) -> float | None:
        return self.mib / self.flushes if self.flushes else None

    @property
    def flush_share(self) -> float | None:
        """The share of the window the disk spent flushing (field 17 over the window)."""
        return self.flush_ms / 1000 / self.seconds if self.seconds else None

    @property
    def mean_flush_ms(self) -> float | None:
        return self.flush_ms / self.flushes if self.flushes else None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, doc) -> "DiskIO | None":
        """None unless `doc` holds the four counts."""
        if not isinstance(doc, dict):
            return None
        counts = [_number(doc.get(k)) for k in ("writes", "sectors", "flushes", "flush_ms")]
        if None in counts:
            return None
        device = doc.get("device")
        return cls(*(int(c) for c in counts), seconds=_number(doc.get("seconds")),
                   device=device if isinstance(device, str) else None)
