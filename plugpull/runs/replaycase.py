"""A case that replays a kept record: one crash state, rebuilt and rechecked, no recording.

A cut number names a state only within its recording (a new recording of the same workload
writes a different log), so a reported state is kept as its record and named in it:

    [replay]
    record = "../records/xfs-log-hole"   # a saved record: record.json, base.qcow2, write.log.gz
    model = "reorder"
    cut = 164
    seed = 1
    reference = "drop-unflushed"         # optional: the minimised state, not the model's own:
    culprits = [18]                      # the reference with these volatile writes as the
                                         # model's state holds them (`plugpull minimise`)
    digest = "..."                       # optional: the state's sha256, checked on replay

`plugpull reproduce` judges it through the same path as `plugpull replay` (the real checker).
"""

from dataclasses import dataclass
from os.path import relpath
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from plugpull.crash.record import Record
from plugpull.crash.artifacts import load_record
from plugpull.crash.crashrun import replay
from plugpull.crash.saved import SavedRecord, read_saved
from plugpull.errors import UsageError
from plugpull.powerloss.models import parse_model
from plugpull.powerloss.variation import REFERENCES, variation
from plugpull.powerloss.writelog import iter_entries
from plugpull.values import SEED_MAX, once_each

RECORD_FILES = ("record.json", "base.qcow2", "write.log.gz")


class ReplaySection(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    record: str = Field(min_length=1)
    model: str
    cut: int = Field(ge=0)
    seed: int = Field(1, ge=0, le=SEED_MAX)
    reference: str | None = None
    culprits: Annotated[list[Annotated[int, Field(ge=0)]], AfterValidator(once_each)] = []
    digest: str | None = Field(None, pattern="^[0-9a-f]{64}$")

    @field_validator("model")
    @classmethod
    def _known_model(cls, text: str) -> str:
        try:
            parse_model(text)
        except ValueError as e:
            raise ValueError(str(e).splitlines()[0]) from None
        return text

    @field_validator("reference")
    @classmethod
    def _known_reference(cls, text: str | None) -> str | None:
        if text is not None and text not in REFERENCES:
            raise ValueError(f"unknown value {text!r} (known: {', '.join(REFERENCES)})")
        return text


@dataclass(frozen=True)
class ReplayCase:
    record: Path  # the saved record's directory
    meta: dict  # its record.json
    model: str
    cut: int
    seed: int
    reference: str | None
    culprits: tuple[int, ...]
    digest: str | None

    @property
    def mode(self) -> str:
        return self.meta.get("mode", "")

    def describe(self) -> str:
        state = f"{self.model} cut {self.cut} seed {self.seed}"
        if self.reference:
            state += f", minimised: the {self.reference} state but entries {', '.join(map(str, self.culprits))}"
        return f"{self.meta.get('fs')} {self.mode} {self.meta.get('workload')}, {state}, record {relpath(self.record)}"


def replay_case(case_path: Path, section: ReplaySection) -> ReplayCase:
    """The [replay] table, with its record found and read: a UsageError (one line, naming the
    field or the file) for anything wrong, before any guest boots."""
    where = f"{case_path}: [replay]"
    if bool(section.reference) != bool(section.culprits):
        raise UsageError(f"{where} {'culprits' if section.reference else 'reference'}: required with "
                         f"{'reference' if section.reference else 'culprits'}")
    record = (case_path.parent / section.record).resolve()
    if not record.is_dir():
        raise UsageError(f"{where} record: {section.record}: no such record directory")
    for name in RECORD_FILES:
        if not (record / name).is_file():
            raise UsageError(f"{where} record: {section.record}: no {name} in it")
    try:
        read_saved(record / "record.json", SavedRecord, "a plugpull record")
    except UsageError as e:
        raise UsageError(f"{where} record: {e}") from None
    meta = Record.load(record).meta
    if not isinstance(meta.get("fs"), str):
        raise UsageError(f"{where} record: {section.record}/record.json names no filesystem")
    return ReplayCase(record, meta, section.model, section.cut, section.seed, section.reference,
                      tuple(section.culprits), section.digest)


def load_replay(case: ReplayCase, scratch: Path) -> tuple[dict, Record, list | None]:
    """Unpack the record into scratch and plan the state: what `replay` takes, checked
    against the log (the cut inside it, the culprits volatile writes of the state)."""
    rec = load_record(case.record, scratch / "record")
    entries = list(iter_entries(rec.log))
    if case.cut > len(entries):
        raise UsageError(f"[replay] cut: {case.cut} is outside the record's log (0..{len(entries)})")
    pieces = None
    if case.reference:
        try:
            pieces = variation(entries, case.cut, case.model, case.seed).pieces(case.reference, case.culprits)
        except ValueError as e:
            raise UsageError(f"[replay] culprits: {e}") from None
    doc = {"fs": rec.meta["fs"], "model": case.model, "cut": case.cut, "seed": case.seed,
           "digest": case.digest or "", "verdict": ""}
    return doc, rec, pieces


def run_replay(case: ReplayCase, rig, scratch: Path, loaded: tuple | None = None) -> dict:
    """Rebuild and recheck the case's state: `replay`'s answer (verdict, reason, digest, ...)."""
    doc, rec, pieces = loaded or load_replay(case, scratch)
    return replay(case.record, rig, scratch, (doc, rec), pieces=pieces)
