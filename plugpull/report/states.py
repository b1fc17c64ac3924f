"""The saved crash states behind a cell's verdict counts, read for the report's state pages.

`plugpull matrix` (and `reproduce`, which runs matrix cells) saves every state that is not
clean under `RESULTS-artifacts/CELL/states/NAME/state.json` (crash.artifacts.save_artifact): the
verdict, the model, cut and digest, the acks owed and lost, and the evidence (mount error,
fsck output, the checker's kernel log). `plugpull minimise` adds `NAME/minimised/` with its
own state.json (the culprit writes) and summary.txt. Only what the page shows is read here;
nothing in an artifact is changed.
"""

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from plugpull.check.writehole import write_hole_losses
from plugpull.errors import UsageError
from plugpull.files import SAVED_JSON_MAX, TEXT_MAX, first_link, read_regular_text
from plugpull.results import CellResult

HEAD_LINES = 12  # the first lines of fsck's output and of a mount error
KERNEL_LINES = 12  # the last lines of the checker's kernel log, when no crash excerpt was kept


@dataclass(frozen=True)
class Minimised:
    """What `plugpull minimise` found for a state: its culprit writes and the summary text."""

    path: Path  # the minimised artifact's directory
    verdict: str
    reason: str
    culprits: tuple[dict, ...]  # rows of minimise.artifact.culprit_rows
    legality: str
    summary: str  # summary.txt, or "" when it is missing


@dataclass(frozen=True)
class KeptState:
    """One saved cut that is not clean, as its state page shows it."""

    name: str  # the artifact directory's name, also the state's anchor on its page
    path: Path  # the artifact directory
    verdict: str
    reason: str
    model: str
    cut: int | None
    cuts: tuple = ()
    seed: int | None = None
    digest: str = ""
    acks_required: int = 0
    acks_lost: int = 0
    acks_allowed: int = 0
    lost: tuple[tuple[object, str], ...] = ()  # (ack, what is missing or wrong), as saved (the first 20)
    broken: tuple[str, ...] = ()  # the workload's invariants the state broke
    mount: str = ""
    fsck: str = ""
    fsck_rc: int | None = None
    kernel: str = ""  # the crash excerpt, or the kernel log's last lines
    kernel_is_excerpt: bool = False
    minimised: Minimised | None = None
    lost_member: int | None = None  # through a redundant stack: the member the check left out
    write_hole: int = 0  # lost acks whose evidence is the RAID5 write hole (check.writehole)


def head(text: str | None, lines: int = HEAD_LINES) -> str:
    """The first non-empty lines of a tool's output."""
    kept = [line for line in (text or "").splitlines() if line.strip()]
    return "\n".join(kept[:lines]) + (f"\n... ({len(kept) - lines} more lines)" if len(kept) > lines else "")


def tail(text: str | None, lines: int = KERNEL_LINES) -> str:
    kept = [line for line in (text or "").splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def read_json(path: Path, follow: bool = True) -> dict | None:
    """A JSON object read from `path`; None if it is missing or not one. A FIFO is a
    UsageError, never a hang; with `follow` False, a symbolic link is left out (and said)."""
    if not follow and path.is_symlink():
        left_out(path, "a symbolic link, not followed")
        return None
    try:
        doc = json.loads(read_regular_text(path, most=SAVED_JSON_MAX, follow=follow))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def left_out(path: Path, why: str) -> None:
    """Something of a saved artifact the report does not show, said once on stderr."""
    print(f"plugpull: warning: {path}: {why}, left out of the report", file=sys.stderr)


def read_summary(path: Path) -> str:
    """A minimised state's summary.txt, "" if it is missing; one that cannot be read as a
    summary (a FIFO, a link, a device, too large, not text) is left out and said."""
    try:
        return read_regular_text(path, most=TEXT_MAX, follow=False)
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError, UsageError) as e:
        left_out(path, f"unreadable ({e.strerror if isinstance(e, OSError) else str(e).rpartition(': ')[2]})")
        return ""


def read_minimised(state_dir: Path) -> Minimised | None:
    where = state_dir / "minimised"
    if where.is_symlink():
        left_out(where, "a symbolic link, not followed")
        return None
    doc = read_json(where / "state.json", follow=False)
    if doc is None:
        return None
    found = doc.get("minimised") if isinstance(doc.get("minimised"), dict) else {}
    legality = found.get("legality") if isinstance(found.get("legality"), dict) else {}
    summary = read_summary(where / "summary.txt")
    culprits = tuple(r for r in found.get("culprits") or () if isinstance(r, dict))
    return Minimised(where, str(doc.get("verdict", "")), str(doc.get("reason", "")), culprits,
                     str(legality.get("reason", "")) if legality else "", summary)


def _lost(doc: dict) -> tuple[tuple[object, str], ...]:
    return tuple((item.get("ack"), str(item.get("reason", ""))) for item in doc.get("lost") or ()
                 if isinstance(item, dict))


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def saved_state(state_dir: Path) -> KeptState | None:
    """A state directory as the page shows it; None if it holds no readable state.json."""
    doc = read_json(state_dir / "state.json")
    if doc is None or not isinstance(doc.get("verdict"), str):
        return None
    evidence = doc.get("evidence") if isinstance(doc.get("evidence"), dict) else {}
    excerpt = doc.get("kernel_excerpt") or evidence.get("kernel_crash") or ""
    return KeptState(
        name=state_dir.name, path=state_dir, verdict=doc["verdict"], reason=str(doc.get("reason", "")),
        model=str(doc.get("model", "")), cut=_int(doc.get("cut")), cuts=tuple(doc.get("cuts") or ()),
        seed=_int(doc.get("seed")), digest=str(doc.get("digest", "")),
        acks_required=_int(doc.get("acks_required")) or 0, acks_lost=_int(doc.get("acks_lost")) or 0,
        acks_allowed=_int(doc.get("acks_allowed")) or 0, lost=_lost(doc),
        broken=tuple(str(b) for b in doc.get("broken") or ()),
        mount=head(evidence.get("mount")), fsck=head(evidence.get("fsck")), fsck_rc=_int(doc.get("fsck_rc")),
        kernel=str(excerpt) if excerpt else tail(evidence.get("kernel")), kernel_is_excerpt=bool(excerpt),
        minimised=read_minimised(state_dir), lost_member=_int(doc.get("lost_member")),
        write_hole=write_hole_losses([item for item in doc.get("lost") or () if isinstance(item, dict)]))


def cell_dir_name(cell: CellResult) -> str:
    """The artifacts directory `plugpull matrix` gives a cell (runs.matrix.run_matrix)."""
    return cell.key.replace("/", "-")


def artifacts_dir(cell: CellResult, results_path: Path | None) -> Path | None:
    """Where the cell's states were saved: beside the results file (or a results directory's
    files) as `matrix` names it, or the path the cell recorded (relative to where the run was started); None if neither exists."""
    recorded = cell.crash.artifacts if cell.crash else None
    candidates = []
    if results_path is not None:
        results_path = Path(results_path)
        files = sorted(results_path.glob("*.jsonl")) if results_path.is_dir() else [results_path]
        candidates += [f.parent / f"{f.stem}-artifacts" / cell_dir_name(cell) for f in files]
    if recorded:
        candidates.append(Path(recorded))
    return next((c.resolve() for c in candidates if (c / "states").is_dir()), None)


def latest_record(docs: list[tuple[Path, dict]]) -> object:
    """The record the newest state.json points at: states of an earlier run of the same cell
    into the same directory point at another record and are not this cell's."""
    newest = max(docs, key=lambda pair: (pair[0] / "state.json").stat().st_mtime)
    return newest[1].get("record")


def _linked(state_dir: Path) -> bool:
    """A state directory, or its state.json, that is a symbolic link: what it shows may be any
    file of the machine, so it is left out (and said)."""
    link = first_link(state_dir.parent, state_dir / "state.json")
    if link is not None:
        left_out(link, "a symbolic link, not followed")
    return link is not None


def cell_states(artifacts: Path | None) -> list[KeptState]:
    """The cell's saved states, in the order of their cuts; [] without an artifacts directory."""
    if artifacts is None:
        return []
    docs = [(d, doc) for d in sorted((artifacts / "states").iterdir())
            if not _linked(d) and d.is_dir() and (doc := read_json(d / "state.json")) is not None]
    if not docs:
        return []
    record = latest_record(docs)
    states = [s for d, doc in docs if doc.get("record") == record and (s := saved_state(d)) is not None]
    return sorted(states, key=lambda s: (s.model, s.cut if s.cut is not None else -1, s.cuts, s.name))
