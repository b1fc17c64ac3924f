"""Headless Chromium as the report's reader: a page is opened at a given window width, a short
script measures it there (does anything overflow horizontally? which links, which ids, how
many states each section lists?) and writes the answer into the DOM, which `--dump-dom`
returns. Links are then followed as the browser resolved them, each page opened in Chromium.

The script goes into a copy of the page beside it (`.chromium-check-NAME`), so that the
page's relative links resolve as they do in the page itself; the copy is removed afterwards.
"""

import html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urldefrag, unquote, urlsplit

WIDTH = 1280
MEASURE = """<script>
(() => {
  const root = document.documentElement;
  const wider = [...document.querySelectorAll("body *")]
    .filter(e => e.getBoundingClientRect().right > root.clientWidth + 0.5 || e.scrollWidth > e.clientWidth + 1)
    .filter(e => getComputedStyle(e).display !== "inline")
    .map(e => e.tagName.toLowerCase() + (e.className ? "." + e.className : "") + (e.id ? "#" + e.id : ""));
  const out = {
    scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, innerWidth: window.innerWidth, wider: wider,
    links: [...document.querySelectorAll("a[href], img[src]")].map(a => [a.getAttribute("href") || a.getAttribute("src"), a.href || a.src, a.textContent.trim()]),
    ids: [...document.querySelectorAll("[id]")].map(e => e.id),
    sections: Object.fromEntries([...document.querySelectorAll("section[id]")].map(s => [s.id, s.querySelectorAll("article.state").length])),
  };
  const pre = document.createElement("pre");
  pre.id = "chromium-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""
ANSWER = re.compile(r'<pre id="chromium-check">(.*?)</pre>', re.S)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def dump_dom(url: str, width: int = WIDTH, height: int = 900) -> str:
    """The DOM of `url` after its scripts ran, at the given window size."""
    done = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--allow-file-access-from-files", f"--window-size={width},{height}", "--dump-dom", url],
                          capture_output=True, text=True, timeout=120)
    return done.stdout


def screenshot(url: str, png: Path, width: int = WIDTH, height: int = 1600) -> Path:
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                    f"--window-size={width},{height}", f"--screenshot={png}", url],
                   capture_output=True, timeout=120, check=True)
    return png


@dataclass(frozen=True)
class Measured:
    """What the script found on a page."""

    path: Path
    scroll_width: int
    client_width: int
    wider: list[str]  # elements wider than the window, or than their own box
    links: list[tuple[str, str, str]]  # (as written, as the browser resolved it, the link's text)
    ids: set[str]
    sections: dict[str, int]  # section id -> the states it lists


def measure(page: Path, width: int = WIDTH) -> Measured:
    page = Path(page)
    probe = page.with_name(f".chromium-check-{page.name}")
    probe.write_text(page.read_text().replace("</body>", MEASURE + "\n</body>"))
    try:
        dom = dump_dom(probe.as_uri(), width)
    finally:
        probe.unlink()
    found = ANSWER.search(dom)
    assert found, f"Chromium gave no answer for {page}: {dom[:300]!r}"
    doc = json.loads(html.unescape(found.group(1)))
    links = [(written, resolved.replace(probe.name, page.name), text) for written, resolved, text in doc["links"]]
    return Measured(page, doc["scrollWidth"], doc["clientWidth"], doc["wider"], links, set(doc["ids"]),
                    doc["sections"])


def local_file(url: str) -> Path | None:
    parts = urlsplit(url)
    return Path(unquote(parts.path)) if parts.scheme == "file" else None


def follow(url: str, pages: dict[Path, Measured]) -> str | None:
    """Why following a link fails, or None. The URL is the one the browser resolved; a page
    is opened in Chromium (once) and a #fragment must name one of its elements; another
    file (state.json, summary.txt) must exist. Data URLs and web links are not followed."""
    if urlsplit(url).scheme in ("data", "http", "https", "mailto"):
        return None
    target, fragment = urldefrag(url)
    path = local_file(target)
    if path is None:
        return "not a file"
    if not path.is_file():
        return "no such file"
    if path.suffix == ".html":
        page = pages.get(path) or measure(path)
        pages[path] = page
        return None if not fragment or unquote(fragment) in page.ids else f"no element with id {fragment!r}"
    return None
