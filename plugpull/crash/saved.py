"""What a run saves and `replay`, `minimise` and `reproduce` read back (a state's
state.json, a record's record.json), validated by a schema as case files are: a damaged
file is refused with exit 2, in one line naming the file and the field, before a guest boots.

Fields a reader does not use (evidence, reason, versions) are kept as they are. A reader that
needs only a few of a state's fields, each checked where it is used (the reproducer's), takes
them unvalidated (`state_fields`): every state.json is read here."""

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from plugpull.check.verdict import Verdict
from plugpull.errors import UsageError
from plugpull.files import SAVED_JSON_MAX, read_regular_text
from plugpull.powerloss.models import parse_model
from plugpull.testbed.fs import FILESYSTEMS
from plugpull.testbed.stack import Stack
from plugpull.values import SEED_MAX, shown

STATE_FILE = "state.json"
KEPT = ConfigDict(extra="allow", strict=True)
Position = Annotated[int, Field(ge=0)]


def _one_of(known, what: str):
    def check(value: str) -> str:
        if value not in known:
            raise ValueError(f"unknown {what} {shown(value)}; known: {', '.join(map(str, known))}")
        return value
    return AfterValidator(check)


def _model(value: str) -> str:
    parse_model(value)  # a ValueError names what is wrong with it
    return value


def _stack(value: str) -> str:
    try:
        Stack.parse(value)
    except UsageError as e:
        raise ValueError(str(e)) from None
    return value


class SavedState(BaseModel):
    """A state directory's state.json (`crash.artifacts.save_artifact`, `minimise.artifact`)."""

    model_config = KEPT
    fs: Annotated[str, _one_of(FILESYSTEMS, "filesystem")]
    model: Annotated[str, AfterValidator(_model)]
    cut: Position
    seed: Annotated[int, Field(ge=0, le=SEED_MAX)]
    digest: str
    verdict: Annotated[str, _one_of([str(v) for v in Verdict], "verdict")]
    record: Annotated[str, Field(min_length=1)]
    cuts: list[Position] | None = None
    cut2: Position | None = None
    lost_member: Position | None = None


class SavedAck(BaseModel):
    model_config = KEPT
    ident: int
    stamp: Position
    position: Position
    position2: Position | None = None
    kind: Annotated[str, _one_of(("ack", "commit"), "ack kind")] = "ack"
    others: list[Position] = []


class SavedRecord(BaseModel):
    """A record's record.json (`crash.record.Record.save`)."""

    model_config = KEPT
    fs: Annotated[str, _one_of(FILESYSTEMS, "filesystem")] | None = None  # the state's own fs is the one used
    workload: Annotated[str, Field(min_length=1)]
    params: dict[str, Any]
    acks: list[SavedAck]
    stack: Annotated[str, AfterValidator(_stack)] = ""


def _where(loc: tuple) -> str:
    """("acks", 3, "ident") -> "acks[3].ident"."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".")


def _message(e: dict) -> str:
    if e["type"] == "missing":
        return "required field is missing"
    return e["msg"].removeprefix("Value error, ") + (f", got {shown(e['input'])}" if e["type"] != "value_error" else "")


def read_saved(path: Path, schema: type[BaseModel], what: str) -> dict:
    """`path`'s JSON object, validated by `schema`: a UsageError naming the file and field."""
    try:
        doc = json.loads(read_regular_text(path, most=SAVED_JSON_MAX))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        detail = e.strerror if isinstance(e, OSError) else str(e).splitlines()[0]
        raise UsageError(f"{path}: not readable as JSON ({detail})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not {what} (a JSON {type(doc).__name__.replace('dict', 'object')}, "
                         "not an object)")
    try:
        schema.model_validate(doc)
    except ValidationError as error:
        first = error.errors()[0]
        raise UsageError(f"{path}: {_where(first['loc'])}: {_message(first)}") from None
    return doc


def state_file(state_dir: Path) -> Path:
    return Path(state_dir) / STATE_FILE


def state_fields(state_dir: Path) -> dict:
    """A saved state's state.json, not checked against `SavedState`; {} for JSON that is not an
    object. A UsageError when it cannot be read as JSON."""
    path = state_file(state_dir)
    try:
        doc = json.loads(read_regular_text(path, most=SAVED_JSON_MAX))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        detail = e.strerror if isinstance(e, OSError) else "not JSON"
        raise UsageError(f"{path}: not a saved crash state ({detail})") from None
    return doc if isinstance(doc, dict) else {}
