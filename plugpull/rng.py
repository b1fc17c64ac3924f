"""Seeded randomness that is the same on every run and every machine.

Every random choice plugpull makes (which cuts, which writes a model keeps, which member of a
RAID loses its disk) draws from a `stable_rng` seeded by the run's seed and what the choice
is for, so that a seed names the same states wherever it is run.
"""

import hashlib
import random


def stable_rng(*parts) -> random.Random:
    """A Random seeded from parts' text, identical across runs (unlike hash())."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest, "big"))
