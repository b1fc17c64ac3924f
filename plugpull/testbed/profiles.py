"""Disk profiles (vmconfig/disks.toml): the cost of a flush and of a write-through write on
the disk a throughput run stands for, applied in the guest with dm-delay.

A profile gives the costs in ms (`flush_ms`, `write_through_ms`), or a drive's datasheet
figures (`seek_ms`, `rpm`) from which both are one average seek plus half a rotation: the
head goes to the block and waits for it to come round. dm-delay's delays are fixed, so a
flush costs the same whatever the cache holds (see docs/throughput.md)."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from plugpull.errors import UsageError
from plugpull.paths import VMCONFIG_DIR

DEFAULT = "hdd"


@dataclass(frozen=True)
class DiskProfile:
    name: str
    summary: str
    flush_ms: int = 0
    write_through_ms: int = 0
    seek_ms: float = 0.0
    rpm: int = 0
    source: str = ""

    @property
    def rotation_ms(self) -> float:
        """The average rotational latency: half a turn."""
        return 30_000 / self.rpm if self.rpm else 0.0

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
    source: str = ""
    flush_ms: int = Field(0, ge=0, le=10_000)
    write_through_ms: int = Field(0, ge=0, le=10_000)
    seek_ms: float = Field(0.0, ge=0, le=1_000)
    rpm: int = Field(0, ge=0, le=30_000)

    @model_validator(mode="after")
    def _one_source_of_costs(self):
        drive = bool(self.seek_ms or self.rpm)
        if drive and (self.flush_ms or self.write_through_ms):
            raise ValueError("give flush_ms/write_through_ms or seek_ms and rpm, not both")
        if drive and not (self.seek_ms and self.rpm):
            raise ValueError("seek_ms and rpm go together")
        return self

    def profile(self, name: str) -> DiskProfile:
        """seek + half a rotation, rounded to dm-delay's whole ms, for a drive's figures."""
        access = round(self.seek_ms + 30_000 / self.rpm) if self.rpm else 0
        return DiskProfile(name, self.summary, self.flush_ms or access, self.write_through_ms or access,
                           self.seek_ms, self.rpm, self.source)


def load_profiles(path: Path = VMCONFIG_DIR / "disks.toml") -> dict[str, DiskProfile]:
    """The profiles of `path`; a field that is unknown or of the wrong type is named."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    out = {}
    for name, table in data.items():
        try:
            doc = _ProfileDoc.model_validate(table)
        except ValidationError as e:
            first = e.errors()[0]
            where = "".join(f" {part}" for part in first["loc"])
            raise UsageError(f"{path}: [{name}]{where}: {first['msg'].removeprefix('Value error, ')}") from None
        out[name] = doc.profile(name)
    return out


def profile(name: str) -> DiskProfile:
    profiles = load_profiles()
    try:
        return profiles[name]
    except KeyError:
        raise UsageError(f"unknown disk profile {name!r}; known: {', '.join(profiles)}") from None
