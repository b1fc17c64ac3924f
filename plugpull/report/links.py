"""A check of a report directory's links: every href and src of every HTML page in it names a
file inside the directory (and an element with that id, for a #fragment), relatively. A
report copied elsewhere or attached to a bug report must still work, so an absolute path, a
file: URL or a link leaving the directory is a broken link here. Data URLs and web links
(http, https, mailto) are left alone.
"""

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

EXTERNAL = ("http", "https", "mailto", "data")


class Page(HTMLParser):
    """An HTML page's links (attribute values of href and src) and element ids."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)
            elif name in ("id", "name") and value:
                self.ids.add(value)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def link_problem(link: str, page: Path, root: Path, pages: dict[Path, Page]) -> str | None:
    """Why a link on `page` does not work inside `root`, or None if it does."""
    parts = urlsplit(link)
    if parts.scheme in EXTERNAL:
        return None
    if parts.scheme or parts.netloc or link.startswith("/"):
        return "not relative"
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    if not target.is_relative_to(root):
        return "leaves the report directory"
    if not target.is_file():
        return "no such file"
    if parts.fragment and target.suffix == ".html":
        ids = (pages.get(target) or parse(target)).ids
        if unquote(parts.fragment) not in ids:
            return f"no element with id {parts.fragment!r}"
    return None


def broken_links(root: Path) -> list[str]:
    """"PAGE: LINK: why" for each link in the directory's HTML pages that does not work."""
    root = Path(root).resolve()
    pages = {path: parse(path) for path in sorted(root.rglob("*.html"))}
    broken = []
    for path, page in pages.items():
        for link in page.links:
            if (why := link_problem(link, path, root, pages)) is not None:
                broken.append(f"{path.relative_to(root)}: {link}: {why}")
    return broken


def links_of(path: Path) -> list[str]:
    return parse(Path(path)).links
