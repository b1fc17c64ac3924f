"""Keep a saved crash state's record for a [replay] case: the original record, its log cut
at the state's cut, since a state is made from the entries before its cut alone (a model's
plan reads entries[:cut] and draws from (seed, cut, model)). The kept record rebuilds the
state with the digest the crash run saved: that is checked before anything is kept.

    python -m plugpull.runs.keeprecord results/crash-.../states/reorder-cut157 suites/records/NAME

prints the [replay] table that names the state in the kept record.
"""

import shutil
import sys
from dataclasses import asdict
from pathlib import Path

from plugpull.crash.record import Record
from plugpull.crash.artifacts import load_state, record_digest, save_record
from plugpull.errors import InfraError, PlugpullError, UsageError
from plugpull.paths import make_tempdir
from plugpull.powerloss.crashstate import CrashState, materialize
from plugpull.powerloss.models import plan
from plugpull.powerloss.writelog import LogEntry, LogWriter, iter_entries, read_superblock, summarize


def _copy_entry(src, out: LogWriter, e: LogEntry) -> None:
    if e.is_flush:
        out.flush()
    elif e.is_discard:
        out.discard(e.sector, e.nr_sectors)
    elif e.is_mark:
        src.seek(e.data_offset)
        out.mark(src.read(e.data_len).rstrip(b"\0").decode())
    else:
        src.seek(e.data_offset)
        out.write(e.sector, src.read(e.data_len), fua=e.is_fua)


def cut_record(rec: Record, cut: int, work: Path) -> Record:
    """The record with only its first `cut` log entries and the acks they hold."""
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(rec.base, work / "base.img")
    with open(rec.log, "rb") as f:
        sector_size = read_superblock(f).sector_size
    with open(rec.log, "rb") as src, LogWriter(work / "write.log", sector_size) as out:
        for e in iter_entries(rec.log):
            if e.index >= cut:
                break
            _copy_entry(src, out, e)
    entries = rec.meta.get("log", {}).get("entries")
    meta = {**rec.meta, "log": asdict(summarize(work / "write.log")),
            "kept": {"from_record": record_digest(rec), "entries_of": entries, "cut_at": cut}}
    meta.pop("cuts", None)
    kept = Record(work, meta, [a for a in rec.acks if a.position <= cut])
    kept.save()
    return kept


def state_digest(rec: Record, model: str, cut: int, seed: int, path: Path) -> str:
    entries = list(iter_entries(rec.log))
    materialize(rec.base, rec.log, plan(entries, cut, model, seed), path, digest=False)
    state = CrashState.of(path)
    try:
        return state.digest()
    finally:
        state.remove()


def keep_record(state_dir: Path, dest: Path, scratch: Path) -> dict:
    """Save the state's record, cut at its cut, at `dest`; the [replay] fields that name it."""
    if dest.exists():
        raise UsageError(f"{dest} exists: a kept record is never replaced")
    doc, rec = load_state(state_dir, scratch / "original")
    kept = cut_record(rec, doc["cut"], scratch / "kept")
    digest = state_digest(kept, doc["model"], doc["cut"], doc["seed"], scratch / "state.img")
    if digest != doc["digest"]:
        raise InfraError(f"the kept record rebuilds {digest}, not the saved state's {doc['digest']}")
    save_record(kept, dest)
    return {"model": doc["model"], "cut": doc["cut"], "seed": doc["seed"], "digest": digest}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m plugpull.runs.keeprecord STATE_DIR DEST", file=sys.stderr)
        return 2
    scratch = make_tempdir("keeprecord")
    try:
        fields = keep_record(Path(argv[0]), Path(argv[1]), scratch)
    except PlugpullError as e:
        print(f"plugpull: {e}", file=sys.stderr)
        return 2 if isinstance(e, UsageError) else 3
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("[replay]\n" + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in fields.items()), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
