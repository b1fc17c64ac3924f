"""What each table's tests pin of the ids the tables before it gave, so that a new table cannot
move them: a digest of every seq-1 workload of the first `tables` tables, and one of 300 seq-2
ids drawn from them, each workload as "ID TEXT | SETUP" (computed with those tables' code)."""

import hashlib
import random

from plugpull.generate.ops import up_to
from plugpull.generate.space import Space


def line(workload) -> bytes:
    return f"{workload.ident} {workload.text()} | {' '.join(workload.setup)}\n".encode()


def seq1_pin(tables: int) -> tuple[int, str]:
    """(how many, their digest): every seq-1 workload of the first `tables` tables."""
    digest, count = hashlib.sha256(), 0
    for workload in Space(1, *up_to(tables)).workloads():
        digest.update(line(workload))
        count += 1
    return count, digest.hexdigest()


def seq2_drawn_pin(tables: int, seed: int) -> str:
    """The digest of 300 seq-2 ids of the first `tables` tables drawn by `seed`, read in the whole space."""
    space, whole = Space(2, *up_to(tables)), Space(2)
    digest = hashlib.sha256()
    for index in sorted(random.Random(seed).sample(range(space.total()), 300)):
        digest.update(line(whole.workload(index)))
    return digest.hexdigest()
