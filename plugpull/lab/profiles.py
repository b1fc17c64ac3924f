"""Disk profiles (vmconfig/disks.toml): the cost of a flush and of a write-through write on
the disk a throughput run stands for, applied in the guest with dm-delay."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from plugpull.errors import UsageError
from plugpull.paths import VMCONFIG_DIR

DEFAULT = "hdd"


@dataclass(frozen=True)
class DiskProfile:
    name: str
    summary: str
    flush_ms: int = 0
    write_through_ms: int = 0

    def delays(self, write_cache: bool, flushes_honoured: bool) -> tuple[int, int]:
        """(write, flush) delays in ms for a disk whose cache is on or off, and whose
        flushes are honoured (a lying disk answers them at once)."""
        write = 0 if write_cache else self.write_through_ms
        flush = self.flush_ms if flushes_honoured and write_cache else 0
        return write, flush

    @property
    def adds_delay(self) -> bool:
        return bool(self.flush_ms or self.write_through_ms)

    def dm_table(self, sectors: int, device: str, write_cache: bool, flushes_honoured: bool) -> str:
        write, flush = self.delays(write_cache, flushes_honoured)
        return f"0 {sectors} delay {device} 0 0 {device} 0 {write} {device} 0 {flush}"


class _ProfileDoc(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    summary: str = ""
    flush_ms: int = Field(0, ge=0)
    write_through_ms: int = Field(0, ge=0)


def load_profiles(path: Path = VMCONFIG_DIR / "disks.toml") -> dict[str, DiskProfile]:
    """The profiles of `path`; a field that is unknown or of the wrong type is named."""
    data = tomllib.loads(path.read_text())
    out = {}
    for name, table in data.items():
        try:
            doc = _ProfileDoc.model_validate(table)
        except ValidationError as e:
            first = e.errors()[0]
            raise UsageError(f"{path}: [{name}] {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        out[name] = DiskProfile(name, doc.summary, doc.flush_ms, doc.write_through_ms)
    return out


def profile(name: str) -> DiskProfile:
    profiles = load_profiles()
    try:
        return profiles[name]
    except KeyError:
        raise UsageError(f"unknown disk profile {name!r}; known: {', '.join(profiles)}") from None
