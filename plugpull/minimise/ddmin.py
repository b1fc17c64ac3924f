"""Delta debugging (ddmin) with a batch oracle: the smallest set of changes that still fails.

    culprits = ddmin(changes, fails)

`fails` takes a list of candidate change sets (tuples, in the order of `changes`) and says
for each whether it still shows the failure. Candidates are asked for in batches of at most
`batch`, so an oracle that runs them in parallel (checker guests) keeps its workers busy; a
batch that holds a failing candidate ends the round, so little is asked in vain. The result
is 1-minimal: removing any one of its changes makes the failure go away. `changes` itself
is taken to fail and the empty set to pass; neither is asked about.
"""

from typing import Callable, Hashable, Sequence

Oracle = Callable[[list[tuple]], list[bool]]


def split(items: tuple, n: int) -> list[tuple]:
    """`items` in n contiguous parts of nearly equal size (none empty when n <= len)."""
    size, extra = divmod(len(items), n)
    parts, start = [], 0
    for i in range(n):
        end = start + size + (i < extra)
        parts.append(items[start:end])
        start = end
    return parts


def _round(current: tuple, n: int) -> list[tuple[tuple, bool]]:
    """The candidates of one round, each with whether it is a part (else a complement).
    With two parts the complements are the parts again, so they are left out."""
    parts = split(current, n)
    rounds = [(p, True) for p in parts]
    if n > 2:
        for part in parts:
            left_out = set(part)
            rounds.append((tuple(c for c in current if c not in left_out), False))
    return rounds


def _ahead(current: tuple, n: int, room: int) -> list[tuple]:
    """Up to `room` candidates a later round asks first: the parts of the next finer split,
    which are the next round's parts whether a part fails now or none does."""
    if room < 1 or 2 * n > len(current):
        return []
    return split(current, 2 * n)[:room]


def _first_failing(candidates: list[tuple[tuple, bool]], fails: Oracle, batch: int, spare=(), known=None):
    """The first failing candidate; `spare` fills a short last batch that has a candidate
    not `known` yet (so it goes to the checkers anyway), asked but not used."""
    for start in range(0, len(candidates), batch):
        chunk = candidates[start:start + batch]
        extra = list(spare)[:batch - len(chunk)] if start + batch >= len(candidates) else []
        if known and all(known(c) for c, _ in chunk):
            extra = []
        verdicts = fails([c for c, _ in chunk] + extra)
        if len(verdicts) != len(chunk) + len(extra):
            raise ValueError(f"the oracle answered {len(verdicts)} of {len(chunk) + len(extra)} candidates")
        for (candidate, is_part), failed in zip(chunk, verdicts):
            if failed:
                return candidate, is_part
    return None


def ddmin(changes: Sequence[Hashable], fails: Oracle, batch: int = 8, on_round=None,
          lookahead: Callable[[tuple], bool] | None = None) -> tuple:
    """A 1-minimal failing subset of `changes` (Zeller and Hildebrandt's ddmin, with the
    parts and complements of a round asked in batches). `on_round(current, n)` is told of
    every round before it is asked. `lookahead(candidate)` says whether a memoising oracle
    knows a candidate already; with it, a batch that must go to the checkers and has room
    also asks the next round's parts, so that round is answered without a trip. The answer
    is the same; a few more candidates are judged."""
    if batch < 1:
        raise ValueError("batch must be at least 1")
    current, n = tuple(changes), 2
    while len(current) >= 2:
        if on_round:
            on_round(current, n)
        candidates = _round(current, n)
        spare = _ahead(current, n, batch - len(candidates) % batch) if lookahead else []
        hit = _first_failing(candidates, fails, batch, spare, lookahead)
        if hit and hit[1]:
            current, n = hit[0], 2
        elif hit:
            current, n = hit[0], max(n - 1, 2)
        elif n >= len(current):
            break
        else:
            n = min(2 * n, len(current))
    return current


class Memo:
    """An oracle that asks `ask` only about candidates it has not seen. `ask` gives an
    answer per candidate (a verdict, say) and `failing(answer)` says whether it fails;
    `known` maps a candidate's key to its answer and is filled as answers come, so that the
    caller can keep it (`after(known)` is called when it grows) and hand it back to resume."""

    def __init__(self, ask: Callable[[list[tuple]], list], key=tuple, known: dict | None = None,
                 failing: Callable[[object], bool] = bool, after=None):
        self.ask, self.key, self.failing, self.after = ask, key, failing, after
        self.known = {} if known is None else known
        self.asked = 0

    def __call__(self, candidates: list[tuple]) -> list[bool]:
        new = list({self.key(c): c for c in candidates if self.key(c) not in self.known}.items())
        if new:
            self.asked += len(new)
            answers = self.ask([c for _, c in new])
            if len(answers) != len(new):
                raise ValueError(f"asked about {len(new)} candidates, got {len(answers)} answers")
            self.known.update((k, a) for (k, _), a in zip(new, answers))
            if self.after:
                self.after(self.known)
        return [self.failing(self.known[self.key(c)]) for c in candidates]

    def knows(self, candidate: tuple) -> bool:
        return self.key(candidate) in self.known
