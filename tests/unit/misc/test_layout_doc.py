"""docs/layout.md is the map of plugpull/: its Layout table names every module and package, and
names none that is not there. No VM, no plugpull import: the tree and the text are read as they are.

How a module is named, in a row of the table under "## Layout":
- by its path in backticks, anywhere in the row: `cli/matrix`, `guest/qemu/` (a package);
- in a row whose first column is one package (`cli/`, **`report/`**), by its bare name in
  backticks in the second column: `matrix`, and `image/` for a subpackage;
- a top-level module (`errors`) by its name in the first column.
A package's `__init__` is named with the package. In the same way every such name must be
there: a path, a first-column name, or a bare lowercase name in a one-package row that is no
module, package or folder is an error (write a name that is not a module otherwise:
`to_json()`, `--kernel host`)."""
import re
from pathlib import Path

from tests.unit.misc.test_imports import STAGES

ROOT = Path(__file__).resolve().parents[3]
LAYOUT = ROOT / "docs" / "layout.md"
PACKAGE = ROOT / "plugpull"

_CODE = re.compile(r"`([^`]+)`")
_PATH = re.compile(r"[a-z_][a-z0-9_]*(/[a-z_][a-z0-9_]*)*/?")
_BARE = re.compile(r"[a-z_][a-z0-9_]*/?")


def modules(package: Path) -> set[str]:
    """What the map must name: `cli/matrix` for a module, `guest/qemu/` for a package."""
    found = set()
    for path in package.rglob("*.py"):
        rel = path.relative_to(package)
        if rel.name == "__init__.py":
            if rel.parent.parts:
                found.add(f"{rel.parent.as_posix()}/")
        else:
            found.add(rel.with_suffix("").as_posix())
    return found


def layout_rows(markdown: str) -> list[tuple[str, str]]:
    """The (first column, second column) of each row of the tables in the Layout section."""
    section = ("\n" + markdown).partition("\n## Layout\n")[2].partition("\n## ")[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and not set(cells[0]) <= set("-: ") and cells[0] != "module":
            rows.append((cells[0], " | ".join(cells[1:])))
    return rows


def _exists(name: str, package: Path) -> bool:
    path = package / name.rstrip("/")
    return path.is_dir() if name.endswith("/") else path.with_suffix(".py").is_file() or path.is_dir()


def _row_names(first: str, rest: str) -> list[str]:
    """The names a row gives, each as a path under plugpull/."""
    heads = [t for t in _CODE.findall(first) if _PATH.fullmatch(t)]
    names = list(heads)
    names += [t for t in _CODE.findall(rest) if "/" in t.rstrip("/") and _PATH.fullmatch(t)]
    if len(heads) == 1 and heads[0].endswith("/"):
        names += [heads[0] + t for t in _CODE.findall(rest) if _BARE.fullmatch(t)]
    return names


def read_map(markdown: str, package: Path) -> tuple[set[str], list[str]]:
    """The names the map gives, and an error line for each that is not in `package`."""
    named, wrong = set(), []
    for first, rest in layout_rows(markdown):
        for name in _row_names(first, rest):
            if _exists(name, package):
                named.add(name)
            else:
                wrong.append(f"docs/layout.md names `{name}` (row {first}), and plugpull/{name} is not there: "
                             "drop or rename it there")
    return named, wrong


def where_to_add(module: str) -> str:
    """The line that says a module is missing from the map, and where it goes."""
    parent, _, own = module.rstrip("/").rpartition("/")
    own += "/" if module.endswith("/") else ""
    if not parent:
        return (f"plugpull/{module} is not named in docs/layout.md: add `{own}` to the first column of the "
                "top-level modules' row of its Layout table")
    return (f"plugpull/{module} is not named in docs/layout.md: add `{own}` to the row of `{parent}/` in its "
            f"Layout table, or `{module}` to any row of it")


def unnamed(markdown: str, package: Path) -> list[str]:
    named, _ = read_map(markdown, package)
    return [where_to_add(m) for m in sorted(modules(package) - named)]


def test_every_module_of_plugpull_is_named_in_the_layout():
    assert unnamed(LAYOUT.read_text(), PACKAGE) == []


def test_the_layout_names_no_module_that_is_not_there():
    assert read_map(LAYOUT.read_text(), PACKAGE)[1] == []


def stage_order(markdown: str) -> list[str]:
    """The stages the Layout section says imports run down, in its order."""
    said = markdown.partition("Imports run one way, in the order")[2].partition("(`tests/unit/misc/test_imports.py`")[0]
    return _CODE.findall(said)


def test_the_layout_gives_the_stage_order_test_imports_checks():
    assert stage_order(LAYOUT.read_text()) == [s for s in STAGES if s != "base"]


def _fake_tree(root: Path) -> Path:
    package = root / "pkg"
    for name in ("__init__.py", "errors.py", "cli/__init__.py", "cli/crash.py", "cli/matrix.py",
                 "guest/__init__.py", "guest/rig.py", "guest/qemu/__init__.py", "guest/qemu/argv.py"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("")
    return package


FAKE = """## Layout

| module | what |
|---|---|
| `cli/` | the command: `crash` (crash, replay), `matrix` |
| `errors` | the error tree |
| **`guest/`** | a `MachineSpec`, imports run `qemu/` <- top |
| `guest/rig` | a `Rig`; `guest/qemu/argv` golden-tested |

## Elsewhere

| `ghost` | not in the Layout section |
"""


def test_a_map_that_names_everything_passes(tmp_path):
    package = _fake_tree(tmp_path)
    assert unnamed(FAKE, package) == [] and read_map(FAKE, package)[1] == []


def test_an_unnamed_module_is_reported_with_where_to_add_it(tmp_path):
    package = _fake_tree(tmp_path)
    (package / "cli" / "reproduce.py").write_text("")
    (package / "values.py").write_text("")
    assert unnamed(FAKE, package) == [
        "plugpull/cli/reproduce is not named in docs/layout.md: add `reproduce` to the row of `cli/` in its "
        "Layout table, or `cli/reproduce` to any row of it",
        "plugpull/values is not named in docs/layout.md: add `values` to the first column of the top-level "
        "modules' row of its Layout table"]


def test_a_module_named_and_gone_is_reported(tmp_path):
    package = _fake_tree(tmp_path)
    (package / "cli" / "matrix.py").unlink()
    (package / "guest" / "rig.py").unlink()
    _, wrong = read_map(FAKE, package)
    assert [w.split(" (row")[0] for w in wrong] == ["docs/layout.md names `cli/matrix`",
                                                    "docs/layout.md names `guest/rig`"]
    assert "plugpull/cli/matrix is not there" in wrong[0]
