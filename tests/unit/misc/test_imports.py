"""plugpull/ as the pipeline it is laid out as: every module imports, the graph of its
`plugpull.*` imports has no cycle, every arrow runs down the stage order below (and inside
guest/, down its room order), and no module is over 400 lines nor any function over 60. Each
checker is also fed an input it must reject."""

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "plugpull"

# plugpull/'s stages from the lowest to the highest: a module imports from its own stage or a
# lower one, never a higher one. "base" is the top-level modules everything shares.
STAGES = ("base", "guest", "kernels", "powerloss", "results", "testbed", "throughput", "check", "generate", "crash",
          "reproducer", "hunt", "cluster", "faults", "runs", "bisect", "report", "minimise", "cli")
BASE = ("__init__", "diskspace", "errors", "files", "locks", "log", "options", "paths", "progress", "prune", "rng",
        "rundir", "sparse", "values", "workdirs")
ENTRY = "__main__"  # `python -m plugpull`: the CLI's stage; importing it runs the CLI
# guest/'s rooms from the lowest to the highest, as the stages are: the backends build on the
# contract and the image, never the reverse; "top" is guest/'s own modules (the rig, the
# backends by name), above every room.
GUEST = "plugpull.guest"
GUEST_ROOMS = ("image", "contract", "qemu", "libvirt", "top")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def _from_base(node: ast.ImportFrom, here: str) -> str:
    """The module a `from ... import` names, resolved against the package `here` when relative."""
    if not node.level:
        return node.module
    parts = here.split(".")
    anchor = parts[:len(parts) - node.level + 1]
    return ".".join(anchor + ([node.module] if node.module else []))


def imports_of(source: str, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of `known` that a module's source imports, in a function too: `from a
    import b` imports the module a.b if there is one, else a."""
    here = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, here)
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names)
    return (found & known) - {name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    files = module_files(package)
    known = set(files)
    return {name: imports_of(path.read_text(), name, path.name == "__init__.py", known)
            for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle as the path that closes it (`[a, b, a]`), or None."""
    state: dict[str, str] = {}  # "open" while on the path being walked, then "done"

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt, path + [nxt])):
                return cycle
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])):
            return cycle
    return None


def stage_of(module: str) -> str:
    """`plugpull.check.checker` -> "check"; a top-level module -> "base" (`__main__`: "cli")."""
    top = module.split(".")[1] if "." in module else "__init__"
    return "base" if top in BASE else "cli" if top == ENTRY else top


def upward(graph: dict[str, set[str]], stages=STAGES) -> list[str]:
    """The arrows that run up the stage order, and the modules in no declared stage."""
    rank = {stage: i for i, stage in enumerate(stages)}
    wrong = [f"{m}: stage {stage_of(m)!r} is not in the stage order" for m in graph if stage_of(m) not in rank]
    return wrong + [f"{m} ({stage_of(m)}) -> {d} ({stage_of(d)})" for m, deps in sorted(graph.items())
                    for d in sorted(deps) if rank.get(stage_of(d), -1) > rank.get(stage_of(m), len(rank))]


def room_of(module: str, rooms=GUEST_ROOMS) -> str | None:
    """`plugpull.guest.qemu.machine` -> "qemu", `plugpull.guest.rig` -> "top"; None outside guest/."""
    if not module.startswith(f"{GUEST}.") and module != GUEST:
        return None
    parts = module.split(".")[2:]
    return parts[0] if parts and (parts[0] in rooms or len(parts) > 1) else "top"


def rooms_upward(graph: dict[str, set[str]], rooms=GUEST_ROOMS) -> list[str]:
    """Inside guest/: the arrows that run up the room order, and the modules in no declared room."""
    rank = {room: i for i, room in enumerate(rooms)}
    inside = {m: room_of(m, rooms) for m in graph if room_of(m, rooms) is not None}
    wrong = [f"{m}: room {r!r} is not in the room order" for m, r in sorted(inside.items()) if r not in rank]
    return wrong + [f"{m} ({inside[m]}) -> {d} ({inside[d]})" for m in sorted(inside) for d in sorted(graph[m])
                    if d in inside and rank.get(inside[d], -1) > rank.get(inside[m], len(rank))]


def too_long(source: str, where: str, max_module=MAX_MODULE_LINES, max_function=MAX_FUNCTION_LINES) -> list[str]:
    """The module if it is over `max_module` lines, and each function (a method, a nested
    one) over `max_function`, counted from its `def` line to its last."""
    lines = len(source.splitlines())
    found = [f"{where}: {lines} lines"] if lines > max_module else []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > max_function:
                found.append(f"{where}:{node.lineno} {node.name}(): {length} lines")
    return found


@pytest.mark.parametrize("name", sorted(module_files()))
def test_every_module_imports(name):
    if name.endswith(f".{ENTRY}"):
        compile(module_files()[name].read_text(), name, "exec")
        return
    importlib.import_module(name)


def test_no_import_cycle():
    assert find_cycle(import_graph()) is None


def test_arrows_run_down_the_stages():
    graph = import_graph()
    assert upward(graph) == []
    assert {stage_of(m) for m in graph} == set(STAGES), "a stage in the order that plugpull/ does not have"


def test_guest_rooms_import_one_way():
    graph = import_graph()
    assert rooms_upward(graph) == []
    assert {room_of(m) for m in graph} - {None} == set(GUEST_ROOMS), "a room in the order that guest/ does not have"


def test_modules_and_functions_are_short():
    found = [f for path in sorted(PACKAGE.rglob("*.py"))
             for f in too_long(path.read_text(), str(path.relative_to(PACKAGE.parent)))]
    assert found == []


# The checkers, each fed what it must reject.

def test_a_cycle_is_found():
    graph = {"plugpull.a": {"plugpull.b"}, "plugpull.b": {"plugpull.c"}, "plugpull.c": {"plugpull.a"},
             "plugpull.d": {"plugpull.a"}}
    assert find_cycle(graph) == ["plugpull.a", "plugpull.b", "plugpull.c", "plugpull.a"]
    no_cycle = {"plugpull.a": {"plugpull.b"}, "plugpull.b": set(), "plugpull.c": {"plugpull.a", "plugpull.b"}}
    assert find_cycle(no_cycle) is None


def test_an_upward_arrow_is_found():
    graph = {"plugpull.check.checker": {"plugpull.crash.judge", "plugpull.errors"},
             "plugpull.crash.judge": {"plugpull.check.checker"}, "plugpull.errors": set()}
    assert upward(graph) == ["plugpull.check.checker (check) -> plugpull.crash.judge (crash)"]
    assert upward({"plugpull.lab.fs": set()}) == ["plugpull.lab.fs: stage 'lab' is not in the stage order"]


def test_an_arrow_up_the_guest_rooms_is_found():
    graph = {"plugpull.guest.contract.backend": {"plugpull.guest.image.build", "plugpull.guest.qemu.machine"},
             "plugpull.guest.image.build": {"plugpull.errors"},
             "plugpull.guest.qemu.machine": {"plugpull.guest.contract.backend", "plugpull.guest.image.build"},
             "plugpull.guest.libvirt": set(), "plugpull.guest.libvirt.machine": {"plugpull.guest.rig"},
             "plugpull.guest.rig": {"plugpull.guest.qemu.machine", "plugpull.guest.libvirt.machine"},
             "plugpull.errors": {"plugpull.guest.rig"}}
    assert rooms_upward(graph) == [
        "plugpull.guest.contract.backend (contract) -> plugpull.guest.qemu.machine (qemu)",
        "plugpull.guest.libvirt.machine (libvirt) -> plugpull.guest.rig (top)"]
    assert room_of("plugpull.guest.libvirt") == "libvirt" and room_of("plugpull.guest") == "top"
    assert room_of("plugpull.errors") is None
    assert rooms_upward({"plugpull.guest.gce.machine": set()}) == [
        "plugpull.guest.gce.machine: room 'gce' is not in the room order"]


def test_imports_inside_functions_count(tmp_path):
    package = tmp_path / "plugpull"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text("def f():\n    from plugpull.high import b\n")
    (package / "low" / "c.py").write_text("from . import a\nfrom .a import f\n")
    (package / "high.py").write_text("import plugpull.low.a\nfrom plugpull.low.c import x\n")
    assert import_graph(package) == {"plugpull": set(), "plugpull.low": set(), "plugpull.low.a": {"plugpull.high"},
                                     "plugpull.low.c": {"plugpull.low.a"},
                                     "plugpull.high": {"plugpull.low.a", "plugpull.low.c"}}
    assert find_cycle(import_graph(package)) == ["plugpull.high", "plugpull.low.a", "plugpull.high"]


def test_an_over_long_function_and_module_are_found():
    body = "".join(f"        x{i} = {i}\n" for i in range(60))
    source = f"def short():\n    pass\n\n\nclass C:\n    def long(self):\n{body}"
    assert too_long(source, "m.py") == ["m.py:6 long(): 61 lines"]
    assert too_long(source, "m.py", max_module=60) == ["m.py: 66 lines", "m.py:6 long(): 61 lines"]
