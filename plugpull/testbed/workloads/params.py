"""A workload's parameters checked for type and range before anything runs, and what its
power-cut script promises: how many acks it sends when it runs to its end.

A workload declares its parameters as dataclass fields with a default. The rule for their
range is the same everywhere: a seed may be 0; a whole number whose default is 0 means "pick
for me" and may be 0; every other whole number is a size or a count and must be at least 1.
A seed is at most `SEED_MAX`, every other whole number at most `COUNT_MAX` (plugpull.values).
A workload with a value set of its own checks it in `__post_init__`.
"""

import re
from dataclasses import MISSING, fields

from plugpull.errors import UsageError
from plugpull.values import COUNT_MAX, SEED_MAX, checked_whole, shown

# What `acked()` writes to the ack port (fd 4) once an operation is durable, and the line that
# calls a generated workload's `pp_acked` (plugpull/generate/program.py).
_ACK = re.compile(r"echo 'ack \d+' >&4|^pp_acked \d+$", re.MULTILINE)


def _minimum(name: str, default) -> int:
    return 0 if name == "seed" or default == 0 else 1


def _kind(annotation) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))


def check_params(name: str, cls, params: dict) -> dict:
    """`params` for workload `name` (of class `cls`), each checked against its field; a
    UsageError names the first parameter that is unknown, of the wrong type or out of range."""
    declared = {f.name: f for f in fields(cls)}
    bad = f"bad parameters for workload {name}"
    for key, value in params.items():
        f = declared.get(key)
        if f is None:
            raise UsageError(f"{bad}: no parameter {key!r}; its parameters: {', '.join(declared) or 'none'}")
        kind = _kind(f.type)
        default = f.default if f.default is not MISSING else None
        if kind == "int":
            try:
                checked_whole(value, _minimum(key, default), SEED_MAX if key == "seed" else COUNT_MAX)
            except ValueError as e:
                raise UsageError(f"{bad}: {key}={shown(value)}: {str(e).partition(', got')[0]}") from None
        elif kind == "str" and not isinstance(value, str):
            raise UsageError(f"{bad}: {key}={shown(value)}: expected text")
    return params


def promised_acks(workload) -> int:
    """How many acks the workload's power-cut script sends if it runs to its end."""
    return len(_ACK.findall(workload.script("/mnt")))
