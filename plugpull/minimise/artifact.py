"""A minimised crash state as an artifact `plugpull replay` rechecks, and its bug report.

The artifact's record is small: its base image is the original base with every durable
write applied (the disk at the last completed flush), its write log holds only the volatile
writes the minimal state keeps, and it owes the acks the original state owed. Its state is
that log's prefix, so replay rebuilds it with no special case. A state on several disks keeps
them all (base2.qcow2, write2.log.gz...), each with its own kept writes, cut at each log's end,
and the member its run lost:

    MIN/state.json       model prefix, cut = the log's length, the culprits, the legality
    MIN/record/          base.qcow2, write.log.gz, record.json
    MIN/summary.txt      the text for a bug report
"""

import os
from dataclasses import asdict
from pathlib import Path

from plugpull import __version__
from plugpull.check.verdict import Ack, required_acks
from plugpull.crash.judge import build_state
from plugpull.crash.record import Record
from plugpull.crash.artifacts import save_record, saved_others
from plugpull.errors import InfraError
from plugpull.files import atomic_path, atomic_write, atomic_write_json
from plugpull.minimise.culprits import Minimised
from plugpull.powerloss.crashstate import materialize
from plugpull.powerloss.legal import Legality, durability, legality
from plugpull.powerloss.models import plan
from plugpull.powerloss.writelog import SECTOR, LogWriter, iter_entries, summarize
from plugpull.testbed.bed import nth

TOOLS = ("qemu-system-x86", "xfsprogs", "e2fsprogs", "btrfs-progs")


def _entries(found: Minimised) -> list[list]:
    return [list(iter_entries(log)) for log in found.record.logs]


def _cuts(found: Minimised) -> tuple[int, ...]:
    return (found.doc["cut"], *saved_others(found.doc))


def culprit_rows(found: Minimised, meanings: dict | None = None) -> list[dict]:
    """A row per culprit write: its disk, where it is, what the minimal state does with it."""
    every, cuts = _entries(found), _cuts(found)
    fate = "persisted" if found.reference == "drop-unflushed" else "lost"
    rows = []
    for d, i in found.culprits:
        e = found.variation.each[d].updates[i]
        flushes = [f.index for f in every[d][:cuts[d]] if f.is_flush]
        rows.append({"disk": d, "entry": i, "sector": e.sector, "sectors": e.nr_sectors, "offset": e.sector * SECTOR,
                     "bytes": e.nr_sectors * SECTOR, "kind": "discard" if e.is_discard else "write", "fate": fate,
                     "after_flush": flushes[-1] if flushes else None, "meaning": (meanings or {}).get((d, i), "")})
    return rows


def minimal_legality(found: Minimised) -> Legality:
    """Whether disks with write caches that honour flushes could leave the minimal state:
    each disk at its own cut; on several disks, the reason names each."""
    plans = found.variation.pieces(found.reference, found.culprits)
    each = [legality(entries, cut, pieces) for entries, cut, pieces in zip(_entries(found), _cuts(found), plans)]
    if len(each) == 1:
        return each[0]
    return Legality(all(one.legal for one in each), "; ".join(f"disk {d}: {one}" for d, one in enumerate(each)))


def _write_log(found: Minimised, disk: int, path: Path) -> int:
    """The disk's kept volatile writes' pieces, in apply order, as a write log; its length."""
    var = found.variation.each[disk]
    durable = set(var.durable)
    pieces = [p for p in found.variation.pieces(found.reference, found.culprits)[disk] if p.entry_index not in durable]
    with open(found.record.logs[disk], "rb") as src, LogWriter(path) as out:
        for p in pieces:
            e = var.updates[p.entry_index]
            if e.is_discard:
                out.discard(p.first_sector, p.nr_sectors)
                continue
            src.seek(e.data_offset + (p.first_sector - e.sector) * SECTOR)
            out.write(p.first_sector, src.read(p.nr_sectors * SECTOR))
    return len(pieces)


def small_record(found: Minimised, work: Path) -> Record:
    """The minimised record in `work`: each disk's base at its last flush, and a log of the
    volatile writes kept on it."""
    work.mkdir(parents=True, exist_ok=True)
    rec, doc = found.record, found.doc
    base, log = work / "base.img", work / "write.log"
    ends = []
    for d, var in enumerate(found.variation.each):
        materialize(rec.bases[d], rec.logs[d], var.pieces("drop-unflushed", ()), nth(base, d), digest=False)
        ends.append(_write_log(found, d, nth(log, d)))
    meta = {**rec.meta, "log": asdict(summarize(log)),
            "minimised_from": {"model": doc["model"], "cut": doc["cut"], "seed": doc["seed"],
                               "digest": doc["digest"], "reference": found.reference}}
    if len(ends) > 1:
        meta.update({f"log{d + 1}": asdict(summarize(nth(log, d))) for d in range(1, len(ends))})
        meta.update(cuts=[ends], minimised_from={**meta["minimised_from"], "cuts": list(_cuts(found))})
    others = (0,) * (len(ends) - 1)
    small = Record(work, meta, [Ack(i, 0, 0, others=others) for i in required_acks(rec.acks, doc["cut"],
                                                                                  saved_others(doc))])
    small.save()
    return small


def _state_digest(rec: Record, pieces: tuple[list, ...], path: Path) -> str:
    state = build_state(rec, pieces, path)
    try:
        return state.digest()
    finally:
        state.remove()


def write_artifact(found: Minimised, dest: Path, scratch: Path, meanings: dict | None = None) -> Path:
    """The minimised artifact at `dest` (replaced whole), on as many disks as the state; its
    digest is checked against the state minimisation judged, so replay rebuilds exactly that."""
    small = small_record(found, scratch / "small-record")
    ends = [sum(1 for _ in iter_entries(log)) for log in small.logs]
    digest = _state_digest(small, tuple(plan(list(iter_entries(log)), end, "prefix", 0)
                                        for log, end in zip(small.logs, ends)), scratch / "small.img")
    judged = _state_digest(found.record, found.variation.pieces(found.reference, found.culprits), scratch / "judged.img")
    if digest != judged:
        raise InfraError("the minimised record does not rebuild the minimised state")
    doc, answer = found.doc, found.answer
    state = {"fs": doc["fs"], "mode": doc.get("mode"), "workload": doc.get("workload"), "model": "prefix",
             "seed": doc["seed"], "cut": ends[0], "cut2": None, "digest": digest,
             **({"cuts": ends} if len(ends) > 1 else {}),
             **({"lost_member": doc["lost_member"]} if doc.get("lost_member") is not None else {}),
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


def _last_flush(rows: list[dict], several: bool) -> str:
    """The last completed flush before the culprits: of each disk they are on, when several."""
    if not several:
        flush = rows[0]["after_flush"] if rows else None
        return "no flush had completed" if flush is None else f"the last completed flush is entry {flush}"
    flushes = {r["disk"]: r["after_flush"] for r in rows}
    return "the last completed flush is " + ", ".join(
        f"{'none' if f is None else f'entry {f}'} on disk {d}" for d, f in sorted(flushes.items()))


def _tail(text: str, lines: int = 12) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return "\n".join(f"    {line}" for line in kept) or "    (none)"


def summary(found: Minimised, dest: Path, meanings: dict | None = None) -> str:
    """The text a person pastes into a bug report."""
    doc, meta, answer = found.doc, found.record.meta, found.answer
    why = [durability(entries, cut) for entries, cut in zip(_entries(found), _cuts(found))]
    several = len(why) > 1
    changes = found.variation.changes(found.reference)
    fate = ("persisted while the other volatile writes were lost" if found.reference == "drop-unflushed"
            else "lost while every other volatile write persisted")
    rows = culprit_rows(found, meanings)
    lines = [
        f"{doc['fs']} ({meta.get('mode')}), workload {meta.get('workload')} {meta.get('params', {})}, "
        f"disk {meta.get('disk_mib')} MiB on {meta.get('bus')}",
        _versions(meta),
        f"power-loss model {doc['model']}, cut after log entr{'ies' if several else 'y'} "
        f"{', '.join(map(str, _cuts(found)))}, seed {doc['seed']}"
        + (f", through {meta['stack']}" if meta.get("stack") else "")
        + (f", member {doc['lost_member']} lost" if doc.get("lost_member") is not None else ""),
        f"verdict: {answer['verdict']}: {answer['reason']}",
        f"reference: {found.reference} (clean); {len(changes)} of {len(found.variation.volatile)} volatile "
        f"writes differ from it; {found.checks} states checked in {found.seconds:.0f} s",
        f"culprit writes ({len(rows)}), {fate}; " + _last_flush(rows, several) + ":",
    ]
    for r in rows:
        lines.append(f"  {'disk ' + str(r['disk']) + ' ' if several else ''}entry {r['entry']:>6}  {r['kind']} at byte {r['offset']} ({r['bytes']} bytes, sector "
                     f"{r['sector']})  {r['fate']}" + (f"  {r['meaning']}" if r["meaning"] else ""))
    lines.append(f"device behaviour: {minimal_legality(found)}")
    if not all(why[d][i] == "" for d, i in found.culprits):
        lines.append("  (some culprit writes were durable: the state needs a disk that ignores flushes)")
    if answer.get("lost"):
        lines.append(f"acks lost: {', '.join(map(str, answer['lost']))}")
    lines += ["mount error:", _tail(answer["mount"]), "fsck:", _tail(answer["fsck"]),
              f"reproduce: plugpull replay {dest}"]
    return "\n".join(lines) + "\n"
