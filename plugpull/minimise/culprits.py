"""Minimise a failing crash state to its culprit writes, judged by the real checker.

    found = minimise(Path("results/crash-.../states/reorder-cut812"), rig, scratch)
    found.culprits   # the volatile writes, as (disk, entry), whose loss (from prefix) or
                     # survival (from drop-unflushed) still gives the state's verdict

The reference is the state with every volatile write persisted, or with none, whichever
the checker finds clean (the one nearer the failing state if both are). ddmin then looks for
a 1-minimal set of changes from it that keeps the failing verdict. Every judged plan is kept
in the artifact's minimise.json, written after each batch, so an interrupted run goes on
where it stopped and no plan is checked twice. A state on several disks (a stack's members,
extlog) varies on all of them: the volatile writes of every disk's log, at its own cut; its
candidates are assembled through the stack, without the member its run lost, as it was.
"""

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from plugpull.check.checker import Checker, default_workers
from plugpull.check.verdict import Verdict, classify, required_acks
from plugpull.crash.judge import build_state, collect_for
from plugpull.crash.record import Record
from plugpull.crash.artifacts import load_state, saved_others
from plugpull.crash.saved import read_saved
from plugpull.crash.spec import recorded_workload
from plugpull.errors import InfraError, PlugpullError, UsageError
from plugpull.files import atomic_write_json
from plugpull.guest.rig import Rig
from plugpull.minimise.ddmin import Memo, ddmin
from plugpull.powerloss.variation import REFERENCES, Disks, disks_variation, plans_key
from plugpull.powerloss.writelog import iter_entries
from plugpull.progress import Progress
from plugpull.testbed.fs import filesystem
from plugpull.testbed.stack import Stack

log = logging.getLogger(__name__)

CACHE = "minimise.json"
CACHE_VERSION = 1
EVIDENCE_CHARS = 4000


class NotMinimisable(PlugpullError):
    """The state's failure is not one a set of volatile writes explains: its own plan no
    longer gives its verdict, or neither reference state is clean. A finding (exit 1)."""


@dataclass(frozen=True)
class Minimised:
    doc: dict  # the artifact's state.json
    record: Record
    variation: Disks
    reference: str
    references: dict  # reference -> its answer
    culprits: tuple[tuple[int, int], ...]  # (disk, entry index)
    answer: dict  # the minimal state's: verdict, reason, mount, fsck, lost
    checks: int  # plans the checker judged in this run
    judged: int  # plans judged in all, with those of earlier runs
    seconds: float


class Judge:
    """Judges plans (a list of pieces per disk) on the checker guests: an answer per plan,
    every answer written to the cache file at once."""

    def __init__(self, rec: Record, doc: dict, rig: Rig, scratch: Path, cache_path: Path,
                 workers: int, batch: int):
        self.rec, self.doc, self.scratch, self.cache_path = rec, doc, scratch, cache_path
        self.workload = recorded_workload(rec.meta["workload"], rec.meta["params"])
        self.owed = required_acks(rec.acks, doc["cut"], saved_others(doc))
        self.committed = required_acks(rec.acks, doc["cut"], saved_others(doc), kind="commit")
        per_guest = max(1, -(-batch // workers))
        stack, lost = Stack.parse(rec.meta.get("stack", "")), doc.get("lost_member")
        self.checker = Checker(rig, filesystem(doc["fs"]), batch=per_guest, workers=workers,
                               **({"stack": stack} if stack else {}), **({"lost": lost} if lost is not None else {}))
        self.cache = load_cache(cache_path, doc["digest"])

    def __call__(self, plans: list[list]) -> list[dict]:
        states = []
        try:
            for i, pieces in enumerate(plans):
                states.append(build_state(self.rec, pieces, self.scratch / f"candidate-{i:03d}.img"))
            bar = Progress(f"minimising: {len(plans)} states", len(plans))
            collect = [collect_for(self.workload, self.owed)] * len(plans)
            observations = self.checker.check(states, progress=bar.advance, collect=collect)
        finally:
            for state in states:
                state.remove()
        answers = [self._answer(obs) for obs in observations]
        for pieces, answer in zip(plans, answers):
            if answer["verdict"] != Verdict.INFRA_ERROR:
                self.cache[plans_key(pieces)] = answer
        self.save()
        broken = [a["reason"] for a in answers if a["verdict"] == Verdict.INFRA_ERROR]
        if broken:
            raise InfraError(f"a candidate state could not be checked: {broken[0]}")
        return answers

    def _answer(self, obs) -> dict:
        v = classify(self.checker.fs, obs, self.workload, self.owed, committed=self.committed)
        return {"verdict": str(v.verdict), "reason": v.reason, "mount": obs.mount_error[-EVIDENCE_CHARS:],
                "fsck": obs.fsck_output[-EVIDENCE_CHARS:], "lost": [lost.ack for lost in v.lost[:20]]}

    def save(self) -> None:
        atomic_write_json(self.cache_path, {"version": CACHE_VERSION, "state": self.doc["digest"],
                                            "judged": self.cache}, indent=None)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    verdict: str
    reason: str
    mount: str = ""
    fsck: str = ""
    lost: list[int] = []


class _Judged(BaseModel):
    """minimise.json: every plan judged, by its key, for the state whose digest is `state`."""

    model_config = ConfigDict(extra="allow", strict=True)
    version: int
    state: str
    judged: dict[str, _Answer]


def load_cache(path: Path, digest: str) -> dict:
    """The plans judged by an earlier run on this state; none if it was another state's (or
    another version's). A damaged file is a UsageError naming it and its field."""
    if not path.exists():
        return {}
    doc = read_saved(path, _Judged, "the plans a minimise run judged")
    if doc["version"] != CACHE_VERSION or doc["state"] != digest:
        return {}
    return doc["judged"]


def loaded(artifact: Path, scratch: Path) -> tuple[dict, Record]:
    """The artifact and its record, refused (UsageError) if there is nothing to minimise."""
    doc, rec = load_state(artifact, scratch)
    if doc["verdict"] in (Verdict.CLEAN, Verdict.INFRA_ERROR):
        raise UsageError(f"{artifact}: its verdict is {doc['verdict']}; only a failing state is minimised")
    load_cache(artifact / CACHE, doc["digest"])
    return doc, rec


def minimise(artifact: Path, rig: Rig, scratch: Path, workers: int = 0, batch: int = 8) -> Minimised:
    started = time.monotonic()
    doc, rec = loaded(artifact, scratch)
    every_entries = [list(iter_entries(log)) for log in rec.logs]
    var = disks_variation(every_entries, (doc["cut"], *saved_others(doc)), doc["model"], doc["seed"])
    states = scratch / "candidates"
    states.mkdir(parents=True, exist_ok=True)
    judge = Judge(rec, doc, rig, states, artifact / CACHE, workers or default_workers(), batch)
    if judge.cache:
        log.info(f"resuming: {len(judge.cache)} plans of this state were judged before")
    target = doc["verdict"]
    memo = Memo(judge, key=plans_key, known=judge.cache, failing=lambda a: a["verdict"] == target)
    reference, references = _reference(var, memo, target)
    changes = var.changes(reference)
    log.info(f"reference {reference} is clean; {len(changes)} volatile writes differ from it")

    def round_told(current, n):
        log.info(f"ddmin: {len(current)} writes left, in {n} parts ({len(memo.known)} plans judged)")

    culprits = ddmin(changes, lambda cands: memo([var.pieces(reference, c) for c in cands]), batch, round_told,
                     lookahead=lambda c: memo.knows(var.pieces(reference, c)))
    shutil.rmtree(states, ignore_errors=True)
    return Minimised(doc, rec, var, reference, references, culprits,
                     memo.known[plans_key(var.pieces(reference, culprits))], memo.asked, len(memo.known),
                     time.monotonic() - started)


def _reference(var: Disks, memo: Memo, target: str) -> tuple[str, dict]:
    """Judge the failing state and both references in one batch; the clean reference
    nearer to the failing state."""
    plans = {"failing": var.pieces("prefix", var.changes("prefix"))}
    plans.update((r, var.pieces(r, ())) for r in REFERENCES)
    memo(list(plans.values()))
    answers = {name: memo.known[plans_key(p)] for name, p in plans.items()}
    if answers["failing"]["verdict"] != target:
        raise NotMinimisable(f"the state itself is now judged {answers['failing']['verdict']} "
                             f"({answers['failing']['reason']}), not {target}: its verdict does not reproduce")
    clean = [r for r in REFERENCES if answers[r]["verdict"] == Verdict.CLEAN]
    if not clean:
        raise NotMinimisable("neither reference state is clean (" + ", ".join(
            f"{r}: {answers[r]['verdict']}" for r in REFERENCES) + "): the volatile writes do not explain it")
    return min(clean, key=lambda r: len(var.changes(r))), {r: answers[r] for r in REFERENCES}
