"""The report of one or more hunts (`plugpull report HUNT_DIR...`): findings.html, a finding
per row and, with several hunts, a column per hunt (its workloads of that finding); a page
per finding listing its workloads (`findings/N.html`); a page per failing workload whose
states were saved (`workloads/H-ID.html`), each state with its evidence as the matrix
report's state pages show it (pages.shown), its state.json and the workload's program.sh
copied beside it. One directory, relative links only; every page is written whole
(atomic_write), the index last, so an interrupted run leaves no half page and no index
pointing at a page not written.
"""

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import TEXT_MAX, atomic_write, first_link, read_regular, staged_directory
from plugpull.hunt.findings import Finding, Hunt, Member, across, families, names_in
from plugpull.hunt.journal import JOURNAL, SETTINGS, Journal, kernels_of
from plugpull.hunt.lock import LOCK
from plugpull.hunt.summary import FAILING, shape_text
from plugpull.report.unwritten import unwritten
from plugpull.report.pages import LISTED, Section, relative, shown, slug, with_same
from plugpull.report.states import cell_states, left_out, read_json

INDEX = "findings.html"
FINDINGS_DIR, WORKLOADS_DIR, DOCS_DIR = "findings", "workloads", "docs"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "findings"  # the reports written for findings, in a checkout
COPIED = ("program.sh", "kernel.txt")  # a failing workload's small files, copied beside its page


def is_hunt(path: Path) -> bool:
    """A directory with a hunt.json of any kind (one that is not a regular file is refused
    when read, not taken for a results directory), or one a hunt holds (hunt.lock)."""
    return Path(path).is_dir() and any(os.path.lexists(Path(path) / name) for name in (SETTINGS, LOCK))


def read_hunt(path: Path) -> Hunt:
    """A hunt's directory read, never changed; UsageError naming what it lacks. Lines of its
    journal that are not whole (garbled, or the last one of a live hunt, half written) are left
    out and said."""
    path = Path(path)
    if is_hunt(path) and not os.path.lexists(path / JOURNAL):
        raise UsageError(f"{path}: a hunt's directory with nothing judged yet (no {JOURNAL})")
    if not is_hunt(path) or not (path / JOURNAL).exists():
        raise UsageError(f"{path}: not a hunt's directory (no {SETTINGS if not is_hunt(path) else JOURNAL})")
    settings = read_json(path / SETTINGS)  # read once; a FIFO named hunt.json is said, not waited on
    if not isinstance(settings, dict):
        raise UsageError(f"{path / SETTINGS}: unreadable")
    journal = Journal(path, settings)
    if journal.left_out:
        print(f"{path / JOURNAL}: {journal.left_out} line(s) not whole left out (torn, garbled, or being written)",
              file=sys.stderr)
    lines = list(journal.done.values())
    odd = [fields for line in lines if (fields := unusable_fields(line))]
    if odd:
        names = ", ".join(sorted({f for fields in odd for f in fields}))
        print(f"{path / JOURNAL}: {len(odd)} line(s) with fields of the wrong type ({names}): those fields left out",
              file=sys.stderr)
    return Hunt(path, settings, lines)


def unusable_fields(line: dict) -> list[str]:
    """The fields of a journal line a report leaves out: `line_damage` for their type, an
    artifact that names no path (a NUL in it)."""
    odd = [key for key in ("lost_kinds", "lost_names", "first_rules") if key in line and names_in(line[key]) is None]
    return odd + (["artifact"] if "\0" in str(line.get("artifact") or "") else [])


def hunt_label(hunt: Hunt) -> str:
    s = hunt.settings
    sample = f", sample {s['sample']} seed {s.get('seed')}" if s.get("sample") else ""
    ops = f", ops {','.join(s['ops'])}" if s.get("ops") else ""
    ops += ", setup unsynced" if s.get("setup") == "unsynced" else ""
    kernels = kernels_of(s)
    on = f"kernel{'s' if len(kernels) > 1 else ''} {', '.join(kernels) or '?'}"
    where = f"{s.get('fs', '?')} {s.get('mode', '?')}, {on}"
    return f"{where}, seq {s.get('seq', '?')}{shape_text(s)}{ops}{sample}"


@dataclass(frozen=True)
class WorkloadPage:
    """A failing workload's saved states, as states.html.j2 shows them."""

    title: str
    href: str  # relative to the report directory
    back: str  # the finding's page, relative to this one
    states: int
    models: str
    sections: tuple[Section, ...]
    files: tuple[tuple[str, str], ...]  # (name, href) of the copied small files


def checked_out(hunt_dirs: list[Path], out: Path) -> None:
    """UsageError if `out` is one of the hunt directories or lies inside one, or inside any
    other hunt's directory: a hunt's directory has one writer, the hunt."""
    target = Path(out).resolve()
    for d in hunt_dirs:
        if target == Path(d).resolve() or target.is_relative_to(Path(d).resolve()):
            raise UsageError(f"--out {out}: inside the hunt directory {d}: give a directory outside it")
    if other := next((d for d in (target, *target.parents) if is_hunt(d)), None):
        raise UsageError(f"--out {out}: inside the hunt directory {other}, which only its hunt writes: "
                         "give a directory outside it")


def default_out(hunt_dirs: list[Path]) -> Path:
    """Beside the first hunt's directory: HUNT-report."""
    first = Path(hunt_dirs[0]).absolute()
    return first.with_name(first.name + "-report")


def workload_sections(line: dict, states, fsck: str = "always") -> tuple[Section, ...]:
    """The workload's states by verdict; `fsck`, the hunt's `--fsck`: what clean was judged by."""
    verdicts = line.get("verdicts") or {}
    note = "a clean state is not saved" + ("" if fsck == "always" else
                                           f"; under --fsck {fsck} clean means the mount and the oracle found "
                                           "nothing, and fsck where it read the state")
    out = [Section("clean", verdicts["clean"], None, note)] if verdicts.get("clean") else []
    for verdict in LISTED:
        count = verdicts.get(verdict, 0)
        these = tuple(s for s in states if s.saved.verdict == verdict)
        if count or these:
            note = "" if count == len(these) else f"{count} counted, {len(these)} saved states found"
            out.append(Section(verdict, count, these, note))
    return tuple(out)


def workload_page(member: Member, hunt: Hunt, out_dir: Path, back: str) -> WorkloadPage | None:
    """The page of a failing workload whose `failing/ID/` is there (None if it is not); its
    state.json files and small files copied beside it."""
    line = member.line
    artifacts = artifacts_of(line, hunt)
    if artifacts is None:
        return None
    several = len(kernels_of(hunt.settings)) > 1  # then a workload has a page per kernel
    on = f" on {line.get('kernel')}" if several else ""
    name = slug(f"{member.hunt + 1}-{line['id']}" + (f"-{line.get('kernel')}" if several else ""))
    page_dir = out_dir / WORKLOADS_DIR
    saved = cell_states(artifacts) if (artifacts / "states").is_dir() else []
    states = with_same(shown(s, out_dir, page_dir, name) for s in saved)
    files = []
    for small in COPIED:
        if (data := small_file(artifacts / small)) is not None:
            (page_dir / name).mkdir(parents=True, exist_ok=True)
            atomic_write(page_dir / name / small, data)
            files.append((small, f"{name}/{small}"))
    models = ", ".join(hunt.settings.get("models") or ()) or "no model named"
    title = f"{line['id']} ({line.get('ops', '')}){on}, hunt {member.hunt + 1}"
    return WorkloadPage(title, f"{WORKLOADS_DIR}/{name}.html", back, int(line.get("states") or 0), models,
                        workload_sections(line, states, str(hunt.settings.get("fsck", "always"))), tuple(files))


def artifacts_of(line: dict, hunt: Hunt) -> Path | None:
    """A failing workload's `failing/ID/` in its hunt's directory, if it is there and reached
    without a link (through one, what the report copies could be any file of the machine:
    left out, and said)."""
    if not hunt.dir or not isinstance(line.get("artifact"), str) or ".." in Path(line["artifact"]).parts:
        return None
    root = Path(hunt.dir).resolve()
    try:
        where = root / line["artifact"]
        link = first_link(root, where / "states")
        if link is None:
            return where if where.is_dir() else None
    except (ValueError, OSError):  # a NUL in the name, a name too long: no such directory
        return None
    left_out(link, "a symbolic link, not followed")
    return None


def small_file(path: Path) -> bytes | None:
    """A small file of a failing workload's, to copy beside its page; None if it is not there
    or cannot be shown (a link, a FIFO, too large: said)."""
    try:
        return read_regular(path, most=TEXT_MAX, follow=False)
    except FileNotFoundError:
        return None
    except (OSError, UsageError) as e:
        left_out(path, e.strerror if isinstance(e, OSError) else str(e).rpartition(": ")[2])
        return None


def reproducer_command(f: Finding) -> str:
    """The command that writes the finding's reproducer: of its smallest workload, in the
    form suites/reproducers/ uses where the finding is one of them."""
    from plugpull.reproducer.findings import LIVE
    member = f.representative
    target, fs = f"gen:{member.line['id']}", f.hunts[member.hunt].settings.get("fs", "FS")
    live = next((live for live in LIVE if (live.target, live.fs) == (target, fs)), None)
    return live.command() if live else f"plugpull reproducer {target} --fs {fs}"


def naming_report(f: Finding, docs: Path = DOCS) -> Path | None:
    """The report written for the finding: a docs/findings/FS-*-report.md that names one of its
    workloads (None if none does, or the docs are not there)."""
    from plugpull.testbed.fs import FILESYSTEMS
    ids = {m.line.get("id") for m in f.workloads}
    for fs in f.filesystems:
        prefix = FILESYSTEMS[fs].mount_type if fs in FILESYSTEMS else fs
        for doc in sorted(Path(docs).glob(f"{prefix}-*report.md")):
            text = doc.read_text(errors="replace")
            if any(i and re.search(rf"\b{re.escape(i)}\b", text) for i in ids):
                return doc
    return None


def copied_report(f: Finding, out_dir: Path) -> str | None:
    """The finding's report copied into the report's docs/, its href from a finding's page."""
    doc = naming_report(f)
    if doc is None:
        return None
    (out_dir / DOCS_DIR).mkdir(exist_ok=True)
    atomic_write(out_dir / DOCS_DIR / doc.name, doc.read_bytes())
    return f"../{DOCS_DIR}/{doc.name}"


def render(env, template: str, path: Path, **values) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, env.get_template(template).render(**values).encode("utf-8"))


def finding_rows(found: list[Finding], hunts: tuple[Hunt, ...]) -> list[dict]:
    """A row per finding for the index: its number, link, signature and counts per hunt."""
    family_of = {id(f): (n, len(group)) for n, group in enumerate(families(found), 1) for f in group}
    return [{"number": n, "href": f"{FINDINGS_DIR}/{n}.html", "finding": f,
             "family": family_of[id(f)][0] if family_of[id(f)][1] > 1 else None,
             "counts": [f.count_in(i) for i in range(len(hunts))]} for n, f in enumerate(found, 1)]


def read_hunts(hunts: list) -> tuple[Hunt, ...]:
    """Hunts as given: a directory is read (`read_hunt`), a Hunt already read is kept, so that
    what a reading says (the lines left out) is said once."""
    return tuple(h if isinstance(h, Hunt) else read_hunt(h) for h in hunts)


def hunt_report(hunt_dirs: list, out_dir: Path) -> dict[str, Path]:
    """Write the findings of `hunt_dirs` (directories, or hunts read) into `out_dir`; the
    index's path ("html") and the pages' directories."""
    from plugpull.report.html import templates
    hunts = read_hunts(hunt_dirs)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_dir = out_dir.resolve()
    env = templates()
    found = across(hunts)
    rows = finding_rows(found, hunts)
    for row in rows:
        workloads = []
        for m in row["finding"].workloads:
            page = workload_page(m, hunts[m.hunt], out_dir, f"../{row['href']}")
            if page is not None:
                render(env, "states.html.j2", out_dir / page.href, page=page)
            workloads.append((m, page, sum(n for v, n in (m.line.get("verdicts") or {}).items() if v in FAILING)))
        render(env, "finding.html.j2", out_dir / row["href"], row=row, workloads=workloads,
               labels=[hunt_label(h) for h in hunts], reproducer=reproducer_command(row["finding"]),
               report=copied_report(row["finding"], out_dir))
    summaries = [(i + 1, hunt_label(h), relative(Path(h.dir).resolve(), out_dir), h) for i, h in enumerate(hunts)]
    render(env, "findings.html.j2", out_dir / INDEX, rows=rows, hunts=summaries,
           failing=[sum(bool(line.get("failing")) for line in h.lines) for h in hunts])
    return {"html": out_dir / INDEX, "findings": out_dir / FINDINGS_DIR}


def hunt_report_main(hunt_dirs: list[Path], out: Path | None, hunts: list[Hunt] | None = None) -> int:
    """`plugpull report HUNT_DIR... [--out DIR]`: 0 done, 2 a bad input or output. `hunts`:
    the directories already read."""
    out_dir = Path(out) if out else default_out(hunt_dirs)
    try:
        checked_out(hunt_dirs, out_dir)
        hunts = read_hunts(hunts or hunt_dirs)
        with staged_directory(out_dir, last=INDEX, inputs=hunt_dirs) as staged:
            hunt_report(list(hunts), staged)
    except UsageError as e:
        print(f"plugpull: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        raise unwritten(out_dir, e) from None
    print(f"findings  {out_dir / INDEX}")
    print(f"report    {out_dir}/ (one directory: copy it whole, its links are relative)")
    return 0
