"""Reading result fields leniently: a value of the wrong JSON type reads as None, so a results
file written by another version, or edited by hand, still loads."""

import hashlib
import json
import math
from dataclasses import asdict, fields
from typing import Any


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _count(value) -> int | None:
    return None if (number := _number(value)) is None else int(number)


def _text(value) -> str | None:
    return None if value is None else str(value)


def _of(kind: type, value):
    """`value` if it is a `kind` (dict, list), else None."""
    return value if isinstance(value, kind) else None


def _plain(value):
    """A JSON value as it reads back from JSON (tuples become lists), so a result that holds
    it compares equal to itself after a round trip."""
    return json.loads(json.dumps(value))


def _settle(obj, **values) -> None:
    """Set fields of a frozen result in __post_init__; a dict field in its JSON form."""
    for name, value in values.items():
        object.__setattr__(obj, name, _plain(value) if isinstance(value, dict) else value)


_LENIENT = {float | None: _number, int | None: _count, str | None: _text}


def _lenient(cls, doc: dict, **given):
    """A `cls` from a JSON object: the fields in `given` as given; those typed `float | None`,
    `int | None` or `str | None` from the key of their name (None if it holds no such value)."""
    found = {f.name: _LENIENT[f.type](doc.get(f.name)) for f in fields(cls) if f.type in _LENIENT}
    return cls(**{**found, **given})


def param_text(value) -> str:
    """A workload parameter's value as a title or a key shows it: strings as they are, but a
    text of several lines (a user's script) by its digest."""
    if isinstance(value, str) and "\n" in value:
        return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:12]
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _pairs(value) -> tuple[tuple[str, Any], ...]:
    """(name, value) pairs sorted by name, from a dict or from pairs."""
    items = value.items() if isinstance(value, dict) else value
    return tuple(sorted((str(k), _plain(v)) for k, v in items))


class _Fields:
    """A result whose JSON object holds its fields as they are."""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict):
        return cls(**{f.name: doc[f.name] for f in fields(cls) if f.name in doc})
