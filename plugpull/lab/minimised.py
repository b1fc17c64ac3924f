"""A minimised crash state as an artifact `plugpull replay` rechecks, and its bug report.

The artifact's record is small: its base image is the original base with every durable
write applied (the disk at the last completed flush), its write log holds only the volatile
writes the minimal state keeps, and it owes the acks the original state owed. Its state is
that log's prefix, so replay rebuilds it with no special case:

    MIN/state.json       model prefix, cut = the log's length, the culprits, the legality
    MIN/record/          base.qcow2, write.log.gz, record.json
    MIN/summary.txt      the text for a bug report
"""

import os
from dataclasses import asdict
from pathlib import Path

from plugpull import __version__
from plugpull.errors import InfraError
from plugpull.files import atomic_path, atomic_write, atomic_write_json
from plugpull.lab.crash import save_record
from plugpull.lab.minimise import Minimised
from plugpull.lab.record import Record
from plugpull.lab.verdict import Ack, required_acks
from plugpull.powerloss.crashstate import CrashState, materialize
from plugpull.powerloss.legal import Legality, durability, legality
from plugpull.powerloss.models import plan
from plugpull.powerloss.writelog import SECTOR, LogWriter, iter_entries, summarize

TOOLS = ("qemu-system-x86", "xfsprogs", "e2fsprogs", "btrfs-progs")


def culprit_rows(found: Minimised, meanings: dict | None = None) -> list[dict]:
    """A row per culprit write: where it is, what the minimal state does with it."""
    entries = list(iter_entries(found.record.log))
    flushes = [e.index for e in entries[:found.doc["cut"]] if e.is_flush]
    last_flush = flushes[-1] if flushes else None
    fate = "persisted" if found.reference == "drop-unflushed" else "lost"
    rows = []
    for i in found.culprits:
        e = found.variation.updates[i]
        rows.append({"entry": i, "sector": e.sector, "sectors": e.nr_sectors, "offset": e.sector * SECTOR,
                     "bytes": e.nr_sectors * SECTOR, "kind": "discard" if e.is_discard else "write",
                     "fate": fate, "after_flush": last_flush, "meaning": (meanings or {}).get(i, "")})
    return rows


def minimal_legality(found: Minimised) -> Legality:
    entries = list(iter_entries(found.record.log))
    return legality(entries, found.doc["cut"], found.variation.pieces(found.reference, found.culprits))


def _write_log(found: Minimised, path: Path) -> int:
    """The kept volatile writes' pieces, in apply order, as a write log; its length."""
    durable = set(found.variation.durable)
    pieces = [p for p in found.variation.pieces(found.reference, found.culprits) if p.entry_index not in durable]
    with open(found.record.log, "rb") as src, LogWriter(path) as out:
        for p in pieces:
            e = found.variation.updates[p.entry_index]
            if e.is_discard:
                out.discard(p.first_sector, p.nr_sectors)
                continue
            src.seek(e.data_offset + (p.first_sector - e.sector) * SECTOR)
            out.write(p.first_sector, src.read(p.nr_sectors * SECTOR))
    return len(pieces)


def small_record(found: Minimised, work: Path) -> Record:
    """The minimised record in `work`: base at the last flush, the kept volatile writes."""
    work.mkdir(parents=True, exist_ok=True)
    rec, doc = found.record, found.doc
    materialize(rec.base, rec.log, found.variation.pieces("drop-unflushed", ()), work / "base.img", digest=False)
    _write_log(found, work / "write.log")
    meta = {**rec.meta, "log": asdict(summarize(work / "write.log")),
            "minimised_from": {"model": doc["model"], "cut": doc["cut"], "seed": doc["seed"],
                               "digest": doc["digest"], "reference": found.reference}}
    small = Record(work, meta, [Ack(i, 0, 0) for i in required_acks(rec.acks, doc["cut"])])
    small.save()
    return small


def _state_digest(base: Path, log: Path, pieces, path: Path) -> str:
    materialize(base, log, pieces, path, digest=False)
    state = CrashState.of(path)
    try:
        return state.digest()
    finally:
        state.remove()


def write_artifact(found: Minimised, dest: Path, scratch: Path, meanings: dict | None = None) -> Path:
    """The minimised artifact at `dest` (replaced whole); its digest is checked against the
    state minimisation judged, so replay rebuilds exactly that."""
    small = small_record(found, scratch / "small-record")
    entries = list(iter_entries(small.log))
    digest = _state_digest(small.base, small.log, plan(entries, len(entries), "prefix", 0), scratch / "small.img")
    judged = _state_digest(found.record.base, found.record.log,
                           found.variation.pieces(found.reference, found.culprits), scratch / "judged.img")
    if digest != judged:
        raise InfraError("the minimised record does not rebuild the minimised state")
    doc, answer = found.doc, found.answer
    state = {"fs": doc["fs"], "mode": doc.get("mode"), "workload": doc.get("workload"), "model": "prefix",
             "seed": doc["seed"], "cut": len(entries), "cut2": None, "digest": digest,
             "verdict": answer["verdict"], "reason": answer["reason"], "record": "record",
             "minimised": {"from": {k: doc[k] for k in ("model", "cut", "seed", "digest")},
                           "reference": found.reference, "culprits": culprit_rows(found, meanings),
                           "legality": asdict(minimal_legality(found)), "checks": found.checks,
                           "plans_judged": found.judged, "seconds": round(found.seconds, 1)},
             "evidence": {"mount": answer["mount"], "fsck": answer["fsck"]}}
    dest.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(dest, directory=True) as tmp:
        save_record(small, tmp / "record")
        atomic_write_json(tmp / "state.json", state)
        atomic_write(tmp / "summary.txt", summary(found, dest, meanings))
        os.chmod(tmp, 0o755)
    return dest


def _versions(meta: dict) -> str:
    packages = meta.get("packages", {})
    tools = ", ".join(f"{t} {packages[t]}" for t in TOOLS if t in packages)
    return f"guest kernel {meta.get('kernel', '?')}; {tools or 'tool versions not recorded'}; plugpull {__version__}"


def _last_flush(rows: list[dict]) -> str:
    flush = rows[0]["after_flush"] if rows else None
    return "no flush had completed" if flush is None else f"the last completed flush is entry {flush}"


def _tail(text: str, lines: int = 12) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return "\n".join(f"    {line}" for line in kept) or "    (none)"


def summary(found: Minimised, dest: Path, meanings: dict | None = None) -> str:
    """The text a person pastes into a bug report."""
    doc, meta, answer = found.doc, found.record.meta, found.answer
    why = durability(list(iter_entries(found.record.log)), doc["cut"])
    changes = found.variation.changes(found.reference)
    fate = ("persisted while the other volatile writes were lost" if found.reference == "drop-unflushed"
            else "lost while every other volatile write persisted")
    rows = culprit_rows(found, meanings)
    lines = [
        f"{doc['fs']} ({meta.get('mode')}), workload {meta.get('workload')} {meta.get('params', {})}, "
        f"disk {meta.get('disk_mib')} MiB on {meta.get('bus')}",
        _versions(meta),
        f"power-loss model {doc['model']}, cut after log entry {doc['cut']}, seed {doc['seed']}",
        f"verdict: {answer['verdict']}: {answer['reason']}",
        f"reference: {found.reference} (clean); {len(changes)} of {len(found.variation.volatile)} volatile "
        f"writes differ from it; {found.checks} states checked in {found.seconds:.0f} s",
        f"culprit writes ({len(rows)}), {fate}; " + _last_flush(rows) + ":",
    ]
    for r in rows:
        lines.append(f"  entry {r['entry']:>6}  {r['kind']} at byte {r['offset']} ({r['bytes']} bytes, sector "
                     f"{r['sector']})  {r['fate']}" + (f"  {r['meaning']}" if r["meaning"] else ""))
    lines.append(f"device behaviour: {minimal_legality(found)}")
    if not all(why[i] == "" for i in found.culprits):
        lines.append("  (some culprit writes were durable: the state needs a disk that ignores flushes)")
    if answer.get("lost"):
        lines.append(f"acks lost: {', '.join(map(str, answer['lost']))}")
    lines += ["mount error:", _tail(answer["mount"]), "fsck:", _tail(answer["fsck"]),
              f"reproduce: plugpull replay {dest}"]
    return "\n".join(lines) + "\n"
