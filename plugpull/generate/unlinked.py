"""The seventh table's model (docs/generate.md#the-seventh-table): a file's last name unlinked
while the workload holds the file open (`unlink-open`), and the point after it, fsync or
fdatasync of the open descriptor (`fsync-open`, `fdatasync-open`): fstests generic/764 and
generic/771. Plain functions on names and trees, so that `ops` can use them without this module
knowing its `Op`.

The shell holds the file open on descriptor `HELD_FD` (`exec 7<FILE`) across the unlink; the
point reopens it through /proc/self/fd/7, which names the inode whatever its names (none here),
so the fsync is of the same inode; then the descriptor is closed, before the point's ack, so
that nothing of the workload holds the filesystem busy (a reproducer unmounts after it)."""

from plugpull.generate.tree import NAMES, Tree

HELD_FD = 7
HELD = f"/proc/self/fd/{HELD_FD}"

# the points of the held descriptor, by the call they make
OPEN_POINTS = {"fsync-open": "fsync", "fdatasync-open": "fdatasync"}


def open_and_unlink(path: str, unlink: str) -> str:
    """The shell command that opens `path` on `HELD_FD` and unlinks it (`unlink`: the
    command the script's style unlinks with). One list that fails as a whole (`|| false`:
    under `set -e` a failure inside an && list alone would not stop the program, and a
    reproducer's `|| die` after it would see only its last command)."""
    return f"exec {HELD_FD}<{path} && {unlink} {path} || false"


def held_point(syncer: str) -> str:
    """The point's command: `syncer` (the style's fsync or fdatasync of a path, without it) of
    the held descriptor, then the descriptor closed; one list that fails as a whole."""
    return f"{syncer} {HELD} && exec {HELD_FD}<&- || false"


def last_name(tree: Tree, path: str) -> bool:
    """`path` is the file's only name: unlinking it leaves the inode with none."""
    return len(tree.names_of(tree.paths[path])) == 1


def gone_names(history: list[Tree], path: str) -> list[tuple[str, str | None]]:
    """(name, what is there now) for every name the file unlinked at the last tree of
    `history` by `path` had since the first: after an fsync of the file with no name left,
    none of them is the file any more (absent, or what is there now). Nothing of the file
    itself: no name reaches it."""
    ino = history[-2].paths[path]
    had = {p for t in history[:-1] for p in t.names_of(ino)}
    return [(p, history[-1].kind(p)) for p in NAMES if p in had]
