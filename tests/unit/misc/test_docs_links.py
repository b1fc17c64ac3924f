"""The README is a front door: at most 200 lines, and every link from it, from docs/ (findings/
too) and from suites/' READMEs to a file of the repository resolves, down to the heading an #anchor names (GitHub's anchors).

No VM, no plugpull import: plain text checks, fast."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
PAGES = [README, *DOCS, *sorted((ROOT / "suites").rglob("README.md"))]

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _prose(markdown: str) -> str:
    """The text outside code: fenced blocks and inline code spans removed."""
    return _INLINE_CODE.sub("", _FENCE.sub("", markdown))


def links(markdown: str) -> list[str]:
    """Every link target outside code, as written: `docs/faults.md#anchor`, `#anchor`, URLs."""
    return _LINK.findall(_prose(markdown))


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lowercased, punctuation dropped, spaces as
    hyphens (`The seeds' drives` -> `the-seeds-drives`)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors of a page's headings; a repeated one gets -1, -2... as on GitHub."""
    seen: dict[str, int] = {}
    out = set()
    for _, title in _HEADING.findall(_FENCE.sub("", markdown)):
        base = github_anchor(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(markdown: str, source: Path) -> list[str]:
    """The relative links of `markdown` (a page at `source`) that do not resolve: a missing
    file, or an #anchor no heading of the target makes. URLs are not followed."""
    broken = []
    for target in links(markdown):
        if _SCHEME.match(target) or target.startswith("//"):
            continue
        path, _, anchor = target.partition("#")
        dest = (source.parent / path).resolve() if path else source.resolve()
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
            continue
        if anchor and dest.suffix == ".md":
            text = markdown if dest == source.resolve() else dest.read_text()
            if anchor not in anchors(text):
                broken.append(f"{target}: no heading gives #{anchor}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert broken_links(page.read_text(), page) == []


def test_the_readme_is_at_most_200_lines():
    assert len(README.read_text().splitlines()) <= 200


def test_the_readme_links_into_docs_and_every_doc_is_reachable():
    targets = {(README.parent / t.partition("#")[0]).resolve() for t in links(README.read_text())}
    index = ROOT / "docs" / "README.md"
    assert index.resolve() in targets
    reachable = targets | {(index.parent / t.partition("#")[0]).resolve() for t in links(index.read_text())}
    assert [str(d.relative_to(ROOT)) for d in DOCS if d.resolve() not in reachable] == []


def test_the_findings_index_links_every_write_up_in_findings():
    index = ROOT / "docs" / "findings.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for t in links(index.read_text())}
    unlisted = [p.name for p in sorted((ROOT / "docs" / "findings").glob("*.md")) if p.resolve() not in linked]
    assert unlisted == [], "add a row for each to the table at the top of docs/findings.md"


def test_the_readme_states_the_test_command():
    assert "make test " in README.read_text() or "make test`" in README.read_text()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_each_doc_begins_with_the_question_it_answers(doc):
    lines = [line for line in doc.read_text().splitlines() if line.strip()]
    assert lines[0].startswith("# ")
    assert re.fullmatch(r"\*[^*].*\?\*", lines[1]), lines[1]


def test_the_checker_reports_a_missing_file_and_a_missing_anchor(tmp_path):
    page = ROOT / "docs" / "README.md"
    text = ("See [faults](faults.md), [gone](no-such-file.md), [bad anchor](faults.md#no-such-heading),\n"
            "[here](#top), [web](https://example.org/x.md), and `[code](not-checked.md)`.\n\n# Top\n\n"
            "```\n[fenced](not-checked-either.md)\n```\n")
    assert broken_links(text, page) == [
        "no-such-file.md: no file docs/no-such-file.md",
        "faults.md#no-such-heading: no heading gives #no-such-heading",
    ]


def test_github_anchors():
    text = "# The seeds\n## The seeds' drives\n## `make deps`\n## Modes, models, verdicts\n## Modes, models, verdicts\n"
    assert anchors(text) == {"the-seeds", "the-seeds-drives", "make-deps", "modes-models-verdicts",
                             "modes-models-verdicts-1"}
