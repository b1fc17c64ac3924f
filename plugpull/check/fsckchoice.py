"""Which crash states the host's fsck reads (`hunt --fsck`), and what fsck costs a check.

    always     every state (the default; what every check did before the choice existed)
    failing    only a state the recovery mount or the oracle already judged not clean
    every:N    about one distinct state in N, chosen by its plan's digest, and every state
               that is not clean

fsck exists to find damage the oracle cannot see: a state whose tree is what its points owe
but whose metadata is broken. `failing` never looks for that damage, and `every:N` looks in
one state of N only, so both can call clean a state that `always` calls fs-corrupt. A state
not fsck'd carries `fsck_rc` None (`NOT_RUN` in a check's report), never 0: its verdict's
reason says fsck did not run, and no report shows it as fsck clean.
"""

import hashlib
import threading
from dataclasses import dataclass, field

from plugpull.values import COUNT_MAX, whole

NOT_RUN = "not-run"  # pp-check's fsck_rc=... for a state the host's fsck was not asked to read
CHOICES = "always, failing or every:N (N a whole number from 1 up)"


@dataclass(frozen=True)
class FsckChoice:
    kind: str = "always"  # always | failing | every
    every: int = 1  # with `every`: one distinct state in this many

    @property
    def text(self) -> str:
        return f"every:{self.every}" if self.kind == "every" else self.kind

    @property
    def always(self) -> bool:
        return self.kind == "always"

    def wants(self, key: bytes, clean: bool) -> bool:
        """Whether a state is fsck'd: its plan's digest `key`, and whether the mount and the
        oracle judged every cut that shares it clean (fsck not run)."""
        if self.kind == "always" or not clean:
            return True
        return self.kind == "every" and picked(key, self.every)


def picked(key: bytes, every: int) -> bool:
    """One state in `every`, the same one whichever chunk, run or order it is checked in."""
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % every == 0


def fsck_choice(text: str) -> FsckChoice:
    """`always`, `failing` or `every:N`; a ValueError says what is accepted."""
    kind, colon, count = text.strip().partition(":")
    if kind in ("always", "failing") and not colon:
        return FsckChoice(kind)
    if kind == "every" and colon:
        try:
            return FsckChoice("every", whole(count, 1, COUNT_MAX))
        except ValueError as e:
            raise ValueError(f"every:N: {e}") from None
    raise ValueError(f"expected {CHOICES}, got {text[:40]!r}")


@dataclass
class CheckTiming:
    """Worker seconds of the hot checker's several-state commands (plug, guest command,
    host fsck, unplug) and, within them, of the host's fsck, with their state counts."""

    many_s: float = 0.0
    many_states: int = 0
    fsck_s: float = 0.0
    fsck_states: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, many_s: float, states: int, fsck_s: float, fscked: int) -> None:
        with self._lock:
            self.many_s += many_s
            self.many_states += states
            self.fsck_s += fsck_s
            self.fsck_states += fscked

    @property
    def share(self) -> float:
        return self.fsck_s / self.many_s if self.many_s else 0.0
