"""The tenth table's model (docs/generate.md, "The tenth table"): a third file name in each
directory (`third`: `A/baz`, `B/baz`, fstests' own third name), links into and out of the
nested directory (`nested-link`), and the nested directory moved into the other directory with
a file made where it was (`move-dir`): what fstests generic/343, 498, 782 and 784 need, and
552's rename. Each operation is its twin of the first table on other names (`TWINS`), so the
program runs it as that one and the oracle's rules apply as they are. Plain tuples, so that
`ops` (which owns the operation table and its `Op`) builds the rows.

Only the operations those tests need, not every operation on every name: each row multiplies
the seq-3 space. No creat, unlink, link to, write, symlink or xattr of the third name: a file
comes to it by rename, with its data, and no test these need does more to it."""

from plugpull.generate.tree import DIR, DIRS, FILE, FILES, NESTED_DIR, THIRD, parent

NAME_FAMILIES = ("third", "nested-link", "move-dir")
NESTED_FAMILIES = ("nested", "nested-link", "move-dir")  # those that make or move a nested name
MOVED_DIR = "B/C"  # where `move-dir.dir` takes A/C: into B, under the name a rename of A gives it

# (family, variant) -> the first table's (family, variant) it runs as
TWINS = {("third", "link"): ("link", ""), ("third", "rename"): ("rename", "file"), ("nested-link", ""): ("link", ""),
         ("move-dir", "dir"): ("rename", "dir"), ("move-dir", "creat"): ("creat", ""),
         ("move-dir", "file"): ("rename", "file")}


def _third_rows() -> list[tuple[str, str, tuple[str, ...]]]:
    """Rename to the third name from foo or bar in its directory and back (generic/552's `mv
    dir/bar dir/baz`, 502's `mv foo qwerty`), rename of it to the other directory's (generic/343's
    `mv y/foo2 x/foo2`), and a link from it back to foo or bar (526's `ln fname3 fname2`)."""
    same = [(f, t) for t in THIRD for f in FILES if parent(f) == parent(t)]
    rows = [("third", "rename", p) for p in same] + [("third", "rename", p[::-1]) for p in same]
    rows += [("third", "rename", (a, b)) for a in THIRD for b in THIRD if a != b]
    return rows + [("third", "link", p[::-1]) for p in same]


def _nested_rows() -> list[tuple[str, str, tuple[str, ...]]]:
    """Links into A/C from A or B, to the same file name (generic/498's `ln B/foo A/C/foo`,
    generic/782's `ln foo dir/bar`), and out of it back to either; A/C moved into B and B/C
    back into A (generic/784's `mv dir1 dir2`, 343's `mv y/z x/z`), a file made where it
    was, and that file moved into the other directory as foo (784's `mv dir1 dir2/foo`)."""
    into = [(f, f"{NESTED_DIR}/{f.rpartition('/')[2]}") for f in FILES]
    rows = [("nested-link", "", p) for p in into] + [("nested-link", "", p[::-1]) for p in into]
    dirs = (NESTED_DIR, MOVED_DIR)
    rows += [("move-dir", "dir", (a, b)) for a in dirs for b in dirs if a != b]
    rows += [("move-dir", "creat", (d,)) for d in dirs]
    return rows + [("move-dir", "file", (d, f"{other}/foo")) for d, other in zip(dirs, reversed(DIRS))]


NAME_ROWS = tuple(_third_rows() + _nested_rows())


def name_step_allowed(sim, family: str, variant: str, args: tuple[str, ...]) -> bool:
    """What a tenth-table step asks beyond its twin's checks (`ops.Sim`): a directory is moved
    to a free name in an existing directory (never over another), and the file where it was is
    one the workload made (the setup makes no file at a directory's name)."""
    if family != "move-dir" or variant == "creat":
        return True
    src, dst = args
    if variant == "file":
        return src in sim.known and sim.tree.kind(src) == FILE
    return sim.exists(src, (DIR,)) and sim.absent(dst)

