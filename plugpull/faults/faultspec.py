"""Fault specs: `KIND[@TRIGGER][+WINDOW][,seed=N]`.

    error-writes              writes fail with EIO
    drop-writes               writes are dropped and reported done
    corrupt-writes            a seeded byte of each written bio is changed
    corrupt-reads             a seeded byte of each read bio is changed
    flaky:UP:DOWN             all I/O fails DOWN seconds out of every UP + DOWN

TRIGGER is the power cut's vocabulary (acks:N, writes:N, time:S; none: from the start),
WINDOW how many seconds the fault lasts (none: until the workload ends), and `seed` picks
the corrupted byte and its value. Example: `error-writes@acks:1+5`.
"""

import random
from dataclasses import dataclass

from plugpull.crash.record import Trigger
from plugpull.errors import UsageError
from plugpull.values import SEED_MAX, decimal, shown, whole

KINDS = ("error-writes", "drop-writes", "corrupt-writes", "corrupt-reads", "flaky")
SEEDED = ("corrupt-writes", "corrupt-reads")
SECTOR = 512

WINDOW_MAX = 86400  # a day: the longest a fault lasts, or waits to go up or down, in seconds
RUNS_MAX = 10000  # runs of one fault case


class FaultSpecError(UsageError):
    def __init__(self, text: str, field: str, problem: str):
        super().__init__(f"bad --fault {text!r}: {field}: {problem}")
        self.field = field


@dataclass(frozen=True)
class FaultSpec:
    kind: str
    trigger: Trigger | None = None  # None: on before the workload starts
    window: float | None = None  # seconds; None: until the workload ends
    seed: int = 1
    up: int = 0  # flaky only
    down: int = 0

    @property
    def corrupt_byte(self) -> tuple[int, int]:
        """(Nth byte of each bio, 1-based; the value written there), from the seed."""
        rng = random.Random(f"fault {self.kind} {self.seed}")
        return rng.randint(1, SECTOR), rng.randint(0, 255)

    def to_json(self) -> dict:
        return {"kind": self.kind, "trigger": str(self.trigger) if self.trigger else None, "window": self.window,
                "seed": self.seed, "up": self.up, "down": self.down}

    def __str__(self) -> str:
        kind = f"flaky:{self.up}:{self.down}" if self.kind == "flaky" else self.kind
        when = f"@{self.trigger}" if self.trigger else ""
        window = f"+{self.window:g}" if self.window is not None else ""
        seed = f",seed={self.seed}" if self.kind in SEEDED else ""
        return f"{kind}{when}{window}{seed}"


def parse_fault(text: str) -> FaultSpec:
    """A FaultSpec, or FaultSpecError naming the first bad field."""
    main, *options = text.strip().split(",")
    head, at, when = main.partition("@")
    if not at:
        head, plus, window_text = head.partition("+")
        trigger_text = ""
    else:
        trigger_text, plus, window_text = when.partition("+")
    kind, up, down = _kind(text, head)
    trigger = _trigger(text, trigger_text) if at else None
    window = _window(text, window_text) if plus else None
    seed = _seed(text, kind, options)
    return FaultSpec(kind, trigger, window, seed, up, down)


def _kind(text: str, head: str) -> tuple[str, int, int]:
    name, *args = head.split(":")
    if name not in KINDS:
        raise FaultSpecError(text, "kind", f"{name!r} is not one of {', '.join(KINDS)}")
    if name != "flaky":
        if args:
            raise FaultSpecError(text, "kind", f"{name} takes no arguments")
        return name, 0, 0
    if len(args) != 2:
        raise FaultSpecError(text, "kind", "flaky needs UP:DOWN seconds (flaky:2:1)")
    up = _whole(text, "up", args[0], 0)
    down = _whole(text, "down", args[1], 1)
    return name, up, down


def _whole(text: str, field: str, value: str, low: int) -> int:
    try:
        return whole(value, low, SEED_MAX if field == "seed" else WINDOW_MAX)
    except ValueError as e:
        raise FaultSpecError(text, field, str(e)) from None


def _trigger(text: str, value: str) -> Trigger:
    try:
        trigger = Trigger.parse(value)
    except UsageError:
        raise FaultSpecError(text, "trigger", f"{value!r}: use acks:N, writes:N or time:SECONDS") from None
    if trigger.kind == "end":
        raise FaultSpecError(text, "trigger", "a fault at the workload's end injects nothing")
    return trigger


def _window(text: str, value: str) -> float:
    try:
        seconds = decimal(value)
    except ValueError:
        seconds = -1
    if not 0 < seconds <= WINDOW_MAX:
        raise FaultSpecError(text, "window", f"{shown(value)} is not a number of seconds from 0 to {WINDOW_MAX}")
    return seconds


def _seed(text: str, kind: str, options: list[str]) -> int:
    seed = 1
    if len(options) > 1:
        raise FaultSpecError(text, "seed", "given twice: one seed=N")
    for option in options:
        key, eq, value = option.partition("=")
        if key != "seed" or not eq:
            raise FaultSpecError(text, "option", f"{option!r}: the only option is seed=N")
        if kind not in SEEDED:
            raise FaultSpecError(text, "seed", f"{kind} has no seed (only {', '.join(SEEDED)})")
        seed = _whole(text, "seed", value, 0)
    return seed
