"""A run's artifacts: each state whose verdict is not clean saved with what rebuilds it, beside
the run's recording saved once; and both read back for `replay`, `minimise` and `reproduce`.

    out/record-DIGEST/   record.json, base.qcow2, write.log.gz (per disk): the recording
    out/states/NAME/     state.json: the state's result, its digest, the path to its record

A crash run (`crashrun`) and a hunt (`hunt.hunter`) save theirs the same way (`state_results`); what
the files hold is checked on reading by the schemas of `saved`.
"""

import gzip
import hashlib
import logging
import os
import shutil
import zlib
from dataclasses import asdict
from pathlib import Path

from plugpull.check.verdict import Verdict
from plugpull.crash.record import Record
from plugpull.crash.saved import SavedRecord, SavedState, read_saved, state_file
from plugpull.crash.spec import recorded_workload
from plugpull.errors import InfraError, ToolMissing, UsageError
from plugpull.files import atomic_path, atomic_write_json
from plugpull.powerloss.writelog import LogFormatError, iter_entries, read_superblock
from plugpull.results import StateResult
from plugpull.testbed.bed import run_host

log = logging.getLogger(__name__)


def state_results(rec: Record, jobs, judged, labels: dict, out_dir: Path, lost_member: int | None = None) -> list[StateResult]:
    """Each job's result (`labels`: its fs, mode, workload and seed); an artifact in `out_dir`
    for each whose verdict is not clean, beside the record saved once."""
    results: list[StateResult] = []
    record_dir = None
    digests: dict[int, str] = {}  # a shared state is hashed once, whichever of its cuts need it
    for job, (v, obs, state, required, distinct) in zip(jobs, judged):
        result = StateResult(
            **labels, model=job.model, cut=job.cut, verdict=str(v.verdict), reason=v.reason,
            acks_required=len(required), acks_lost=len(v.lost), fsck_rc=obs.fsck_rc,
            lost=[asdict(l) for l in v.lost[:20]], cuts=job.cuts if job.others else None,
            kernel_excerpt=obs.kernel_excerpt or None, distinct=distinct, acks_allowed=v.allowed, broken=v.broken[:20],
        )
        if v.verdict is not Verdict.CLEAN:
            record_dir = record_dir or saved_record(out_dir, rec)
            digest = digests[distinct] = digests.get(distinct) or state.digest()
            artifact = save_artifact(out_dir, record_dir, result, digest, obs, lost_member)
            result = StateResult(**{**asdict(result), "artifact": str(artifact)})
        log.debug("%s cut %s: %s, %s (%d acks owed, %d lost, fsck rc %s)", job.model, job.where, result.verdict,
                  result.reason, len(required), len(v.lost), obs.fsck_rc)
        results.append(result)
    return results


def record_digest(rec: Record) -> str:
    """What names a recording in an out dir: the sha256 of its record.json and write logs."""
    h = hashlib.sha256()
    for path in (rec.dir / "record.json", *rec.logs):
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()[:16]


def saved_record(out_dir: Path, rec: Record) -> Path:
    """The run's recording in `out_dir`, saved once: `record-DIGEST`, so that a run that reuses
    an out dir never pairs its states with another run's recording."""
    record_dir = out_dir / f"record-{record_digest(rec)}"
    if not (record_dir / "record.json").is_file():
        save_record(rec, record_dir)
    return record_dir


def save_artifact(out_dir: Path, record_dir: Path, result: StateResult, digest: str, obs,
                  lost_member: int | None = None) -> Path:
    """A state directory with what rebuilds and rechecks it, pointing at its run's record
    (and the stack's member its check left out, with --lose-disk)."""
    name = f"{result.model.replace(':', '_').replace('+', '_')}-cut{result.cut}"
    for other in (result.cuts or ())[1:]:
        name += f"-{other}"
    where = out_dir / "states" / name
    where.mkdir(parents=True, exist_ok=True)
    doc = {**asdict(result), "record": os.path.relpath(record_dir, where), "digest": digest,
           **({} if lost_member is None else {"lost_member": lost_member}),
           "evidence": {"fsck": obs.fsck_output, "mount": obs.mount_error, "kernel": obs.kernel_log,
                        "kernel_crash": obs.kernel_excerpt}}
    atomic_write_json(state_file(where), doc)
    return where


def save_record(rec: Record, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    pairs = zip(rec.bases, rec.logs)
    with atomic_path(dest, directory=True) as tmp:
        for base, log in pairs:
            run_host(["qemu-img", "convert", "-c", "-f", "raw", "-O", "qcow2", str(base),
                      str(tmp / base.with_suffix(".qcow2").name)])
            with open(log, "rb") as src, gzip.open(tmp / f"{log.name}.gz", "wb", compresslevel=3) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        shutil.copy(rec.dir / "record.json", tmp / "record.json")
        os.chmod(tmp, 0o755)


def load_record(saved: Path, scratch: Path) -> Record:
    """Unpack a saved record into scratch as a raw base image and a plain log; a UsageError
    names the file that is missing or damaged."""
    scratch.mkdir(parents=True, exist_ok=True)
    _need(saved / "record.json", saved / "base.qcow2", saved / "write.log.gz")
    read_saved(saved / "record.json", SavedRecord, "a plugpull record")
    shutil.copy(saved / "record.json", scratch / "record.json")
    try:
        rec = Record.load(scratch)
        recorded_workload(rec.meta["workload"], rec.meta["params"])
    except UsageError as e:  # its workload or parameters, refused as the CLI refuses them
        raise UsageError(f"{saved / 'record.json'}: workload, params: {e}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise UsageError(f"{saved / 'record.json'}: not a plugpull record ({describe_bad(e)})") from None
    for base, log in zip(rec.bases, rec.logs):
        _need(saved / f"{base.stem}.qcow2", saved / f"{log.name}.gz")
        _unpack_image(saved / f"{base.stem}.qcow2", base)
        _unpack_log(saved / f"{log.name}.gz", log)
    return rec


def _need(*paths: Path) -> None:
    for path in paths:
        if not path.is_file():
            raise UsageError(f"{path}: missing from the saved crash state")


def _unpack_image(qcow2: Path, raw: Path) -> None:
    try:
        run_host(["qemu-img", "convert", "-f", "qcow2", "-O", "raw", str(qcow2), str(raw)])
    except InfraError as e:
        if isinstance(e, ToolMissing):
            raise
        raise UsageError(f"{qcow2}: not a readable qcow2 image") from None


def _unpack_log(packed: Path, log: Path) -> None:
    try:
        with gzip.open(packed, "rb") as src, open(log, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        with open(log, "rb") as f:
            read_superblock(f)
    except (OSError, EOFError, zlib.error, LogFormatError) as e:
        raise UsageError(f"{packed}: damaged ({describe_bad(e)})") from None


def describe_bad(error: Exception) -> str:
    return f"no {error}" if isinstance(error, KeyError) else str(error).splitlines()[0]


def load_state(state_dir: Path, scratch: Path) -> tuple[dict, Record]:
    """A saved state's state.json and its unpacked record, checked before any guest boots."""
    path = state_file(state_dir)
    doc = read_saved(path, SavedState, "a saved crash state")
    rec = load_record((state_dir / doc["record"]).resolve(), scratch / "record")
    end = sum(1 for _ in iter_entries(rec.log))
    if doc["cut"] > end:
        raise UsageError(f"{path}: cut {doc['cut']!r} is outside the record's log (0..{end})")
    return doc, rec


def saved_others(doc: dict) -> tuple[int, ...]:
    """A saved state's cuts in the other disks' logs: `cuts` after the first, or an older
    artifact's `cut2`."""
    if doc.get("cuts"):
        return tuple(doc["cuts"][1:])
    return () if doc.get("cut2") is None else (doc["cut2"],)
