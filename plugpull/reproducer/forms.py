"""Which form of reproducer shows a finding every time, decided from what the finding has.

- `flakey`: what was lost is what the filesystem wrote (every write the point made was covered
  by a flush, or the state lost no write at all: a `prefix` state): fstests' dm-flakey drop;
- `delay`: a write of the point completed after the point's last flush was issued, or after
  the call returned: the filesystem did not wait for it. dm-delay holds writes (not flushes)
  above dm-flakey, and the drop at the return loses it every time;
- `flushes`: the point wrote and no flush followed before the call returned: the device's
  flush count (sh) or dm-log-writes (fstests) shows that no flush came;
- `log-hole`: a state XFS log recovery cannot read: the crafted log of the XFS finding.

A saved state is read for it: its verdict and model, and its record's write log between the
ack before the point and the point's own (the point's writes and flushes), and the writes
logged after the point's ack (completed after the call returned). A case file that replays a
state XFS cannot mount is the log hole. A `gen:ID` alone has no write log: flakey, said so.
`--form` overrides the choice."""

import gzip
import json
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from plugpull.crash.saved import state_fields
from plugpull.errors import UsageError
from plugpull.files import SAVED_JSON_MAX, TEXT_MAX, open_regular, read_regular_text
from plugpull.powerloss.writelog import iter_entries

FORMS = ("flakey", "delay", "flushes", "log-hole")


@dataclass(frozen=True)
class Choice:
    form: str
    why: str


@dataclass(frozen=True)
class Window:
    """The write log around point K: entries logged after ack K-1 up to ack K, and those logged
    after ack K up to the next ack (or the log's end)."""

    before: tuple  # (is_write, is_flush) per entry, up to the point's ack
    after: tuple

    def writes(self) -> int:
        return sum(w for w, _ in self.before)

    def last_flush(self) -> int | None:
        found = [i for i, (_, f) in enumerate(self.before) if f]
        return found[-1] if found else None


def window_choice(w: Window, point: int) -> Choice:
    """The form the point's window calls for (the state lost some write)."""
    late = sum(is_write for is_write, _ in w.after)
    last = w.last_flush()
    if w.writes() and last is None:
        return Choice("flushes", f"point {point} wrote {w.writes()} block(s) and no flush was logged before its "
                                 "call returned")
    uncovered = sum(is_write for is_write, _ in w.before[last + 1:]) if last is not None else 0
    if uncovered or late:
        return Choice("delay", f"point {point}'s last flush was issued with {uncovered + late} of its writes not "
                               f"completed ({uncovered} logged after that flush, {late} after the call returned)")
    return Choice("flakey", f"every write of point {point} was logged before its last flush: what was lost is what "
                            "the filesystem wrote")


def point_window(entries: list, acks: list[dict], point: int) -> Window:
    """The window of point `point` in a log's `entries`, from the record's acks (ack K is
    point K; `position`: entries complete when it was stamped)."""
    at = {a["ident"]: a["position"] for a in acks}
    if point not in at:
        raise UsageError(f"the record has no ack of point {point}")
    start, end = at.get(point - 1, 0), at[point]
    later = [p for ident, p in at.items() if ident > point]
    stop = min(later) if later else len(entries)
    flags = [(e.is_write, e.is_flush) for e in entries]
    return Window(tuple(flags[start:end]), tuple(flags[end:stop]))


def _record_entries(record: Path) -> tuple[list, list[dict]]:
    try:
        acks = json.loads(read_regular_text(record / "record.json", most=SAVED_JSON_MAX))["acks"]
        with tempfile.TemporaryDirectory(prefix="plugpull-form-") as tmp:
            log = Path(tmp) / "write.log"
            with open_regular(record / "write.log.gz") as packed, gzip.open(packed) as src, open(log, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            return list(iter_entries(log)), acks
    except (OSError, ValueError, KeyError, EOFError) as e:
        raise UsageError(f"{record}: its record cannot be read for the form ({e}): give --form") from None


def state_choice(state_dir: Path, point: int) -> Choice:
    """The form a saved state of a generated workload calls for, at `point`."""
    doc = state_fields(state_dir)
    if doc.get("verdict") == "unmountable" and doc.get("fs") == "xfs":
        return Choice("log-hole", "the state is one XFS log recovery cannot read (unmountable)")
    if doc.get("minimised"):
        raise UsageError(f"{state_dir}: a minimised state's record holds only its volatile writes, which cannot say "
                         "whether a flush came: give the state it was minimised from, or --form")
    if doc.get("model") == "prefix":
        return Choice("flakey", "a prefix state loses no write before its cut: what was lost is what the filesystem "
                                "wrote")
    if not isinstance(doc.get("record"), str):
        raise UsageError(f"{state_dir}: the state names no record to read the form from: give --form")
    entries, acks = _record_entries((Path(state_dir) / doc["record"]).resolve())
    return window_choice(point_window(entries, acks, point), point)


def case_choice(case_file: Path) -> Choice:
    """A case file that replays a kept state: the log hole if the state is XFS's unmountable
    one, else refused (exit 2)."""
    try:
        doc = tomllib.loads(read_regular_text(case_file, most=TEXT_MAX))
        replay = doc["replay"]
        record = json.loads(read_regular_text(Path(case_file).parent / replay["record"] / "record.json",
                                              most=SAVED_JSON_MAX))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{case_file}: not a case file that replays a kept state ({e})") from None
    expected = set((doc.get("expect") or {}).get("verdicts", {}).values())
    if record.get("fs") == "xfs" and expected == {"unmountable"}:
        culprits = replay.get("culprits") or []
        return Choice("log-hole", f"the case's state is one XFS log recovery cannot read (unmountable; minimised to "
                                  f"{len(culprits)} lost write(s))")
    raise UsageError(f"{case_file}: no reproducer form for its finding (only XFS's unmountable log state has one)")


def gen_choice() -> Choice:
    return Choice("flakey", "a gen:ID alone has no write log to say more: give a saved state of it, or --form")


@dataclass(frozen=True)
class Target:
    case: object  # plugpull.reproducer.ReproducerCase; None for the log hole, which runs no workload
    form: str
    why: str


def texts(t: Target, style: str, number: str = "NNN") -> tuple[str, str | None]:
    """The reproducer of `t` in `style`: the script or test, and the test's golden output. Each
    form is a module giving both styles."""
    from plugpull.reproducer import delay, flakey, flushes, loghole
    if t.form == "log-hole":  # no workload: the crafted log alone
        return (loghole.fstests_test(number), loghole.golden(number)) if style == "fstests" else (loghole.script(), None)
    form = {"flakey": flakey, "delay": delay, "flushes": flushes}[t.form]
    return (form.fstests_test(t.case, number), form.golden(t.case, number)) if style == "fstests" \
        else (form.script(t.case), None)
