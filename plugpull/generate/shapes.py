"""Shapes: longer workloads (four to six operations) in the orders the known bugs have
(docs/generate.md#shapes-longer-workloads). A whole `--seq 4` space cannot be counted (seq 3
of the nine tables is 3.7 billion workloads, seq 4 about a thousand times more), so a longer
workload comes in a named shape: a fixed list of step positions, each allowing a set of
operation families and of persistence points (`NO_POINT`: the step may end without one). A
shape's space (`space.Space` with `shape=`) prunes, orders, counts and samples as every
other does; its ids name it: `seq5.renames-000042`.

Each shape is for the bugs of suites/known/fstests.toml named in its `why`; a shape's
positions, once given, are its ids: change them and every id of the shape changes (the
pinned counts in tests/unit/generate/test_generate_shapes.py say so)."""

from dataclasses import dataclass

from plugpull.errors import UsageError
from plugpull.generate.ops import FAMILIES, PERSISTENCE

NO_POINT = "none"  # among a position's points: the step may end without a persistence point
OWN = ("fsync", "fdatasync", "sync")  # the points of what the step touched, and sync
ANY = ("fsync-any", "fdatasync-any")  # the points of a name the step did not touch


@dataclass(frozen=True)
class Shape:
    name: str
    why: str  # one line: the known bugs it is for, and the order it has
    positions: tuple[tuple[frozenset, frozenset], ...]  # per step: (operation families, points)


def at(families: tuple[str, ...], points: tuple[str, ...]) -> tuple[frozenset, frozenset]:
    """A position: a step of one of `families`, ended by one of `points` (or by none, with
    `NO_POINT` among them)."""
    unknown = [n for n in families if n not in FAMILIES] + [p for p in points if p not in (*PERSISTENCE, NO_POINT)]
    if unknown:
        raise ValueError(f"a shape's position names {unknown[0]!r}, no operation family or point")
    return frozenset(families), frozenset(points)


def allows(position: tuple[frozenset, frozenset], op, persist) -> bool:
    """Whether a position allows a step: `op` (an `ops.Op`) ended by `persist` (an
    `ops.Persist`, or None: `NO_POINT`)."""
    return op.family in position[0] and (persist.kind if persist else NO_POINT) in position[1]


SHAPES = (
    Shape("renames", "btrfs/243: a name made and fsynced; a rename; a rename; a write or truncate and a point; "
          "a second point", (
              at(("creat",), OWN), at(("rename",), (NO_POINT,)), at(("rename",), (NO_POINT,)),
              at(("write", "truncate", "resize"), ("fsync", "fdatasync", *ANY)), at(("again",), ("sync", *ANY)))),
    Shape("write-rename", "btrfs/236: a name made; a write and its fsync; a rename or link of it; a write to it "
          "and another name's fsync; a second point", (
              at(("creat",), (NO_POINT,)), at(("write",), ("fsync", "fdatasync")),
              at(("rename", "link"), (NO_POINT,)), at(("write",), ANY), at(("again",), ("sync", *ANY)))),
    Shape("evict-rename", "generic/640: a name made or linked and its directory's fsync; inode eviction; a "
          "rename, link or unlink; a name made or written and fsynced", (
              at(("creat", "mkdir", "link"), OWN), at(("evict",), (NO_POINT,)),
              at(("rename", "link", "unlink"), (NO_POINT,)), at(("creat", "write"), ("fsync", "fdatasync", *ANY)))),
    Shape("nested-new", "generic/785: a file written or made and fsynced; two steps in the nested directory; a "
          "rename or link and a directory's fsync", (
              at(("write", "creat"), ("fsync", "fdatasync")), at(("nested",), (NO_POINT,)),
              at(("nested",), (NO_POINT,)), at(("rename", "link"), ("fsync", "sync", "fsync-any")))),
    Shape("rename-link", "generic/479, generic/502, generic/526: a name made, written, linked or renamed; a "
          "rename; a rename or link; a name made, written or linked and fsynced", (
              at(("creat", "write", "link", "rename"), (NO_POINT, *OWN)), at(("rename",), (NO_POINT,)),
              at(("rename", "link"), (NO_POINT,)), at(("creat", "write", "link"), OWN + ANY))),
    Shape("extents", "btrfs/206: preallocation, a punch, writes, a truncate, points between", (
              at(("falloc", "falloc-eof"), (NO_POINT, *OWN)), at(("falloc", "falloc-eof", "punch"),
                                                                  (NO_POINT, "fsync", "fdatasync")),
              at(("write", "dwrite", "falloc"), (NO_POINT, "fsync", "fdatasync")),
              at(("write", "truncate", "resize"), (NO_POINT, "fsync", "fdatasync")),
              at(("write", "truncate", "resize"), OWN))),
    Shape("links", "generic/041: a name unlinked or renamed over; links made and unlinked in turn; the last and "
          "a point", (
              at(("unlink", "rename"), (NO_POINT,)), at(("link",), (NO_POINT,)), at(("link",), (NO_POINT,)),
              at(("unlink",), (NO_POINT,)), at(("link",), (NO_POINT,)), at(("link", "creat"), OWN + ANY))),
    Shape("evict-third", "generic/552: a name made; a write to another; inode eviction and the first's fsync; "
          "the other renamed to the third name and fsynced", (
              at(("creat",), (NO_POINT,)), at(("dwrite", "write"), (NO_POINT,)), at(("evict",), ANY),
              at(("third",), OWN + ANY))),
    Shape("third-rename", "generic/502: a link or a name made; a rename to the third name; a rename into the "
          "name it freed; a name made, written or linked and fsynced", (
              at(("link", "creat"), (NO_POINT, *OWN)), at(("third",), (NO_POINT,)), at(("rename", "third"), (NO_POINT,)),
              at(("creat", "write", "link"), OWN + ANY))),
    Shape("snapshot-rmdir", "btrfs/120: a snapshot made in a directory; deleted; the directory removed; made again "
          "and fsynced", (
              at(("snapshot",), (NO_POINT,)), at(("snapshot",), (NO_POINT,)), at(("rmdir",), (NO_POINT,)),
              at(("mkdir",), OWN))),
    Shape("prealloc-truncate", "btrfs/206 (btrfs+holes): a file made; a preallocation past its end and a punch; "
          "two writes from its start; a truncate up and a point", (
              at(("creat",), (NO_POINT,)), at(("holes",), (NO_POINT,)), at(("holes",), (NO_POINT,)),
              at(("write", "holes"), (NO_POINT,)), at(("write", "holes"), (NO_POINT,)), at(("holes",), OWN))),
    Shape("hole-merge", "generic/695 (btrfs+holes): a file made; a truncate up; a write and sync; two punches, "
          "the second next to a hole, and fsync", (
              at(("creat",), (NO_POINT,)), at(("holes",), (NO_POINT,)), at(("holes",), ("sync", NO_POINT)),
              at(("holes",), (NO_POINT,)), at(("holes",), ("fsync", "fdatasync")))),
    Shape("four-names", "generic/479, generic/526: a name made, or moved to the third or fourth name; two "
          "renames or links among the four names; a name made and fsynced", (
              at(("creat", "third", "fourth"), (NO_POINT, *OWN)), at(("third", "fourth"), (NO_POINT,)),
              at(("third", "fourth"), (NO_POINT,)), at(("creat", "fourth"), OWN + ANY))),
    Shape("eof-gap", "generic/677: a write (direct I/O or not); a preallocation past the end; a second one, a block "
          "after the first, and sync; a write into the file and fsync", (
              at(("dwrite", "write"), (NO_POINT,)), at(("falloc-eof", "prealloc"), (NO_POINT,)),
              at(("prealloc",), ("sync", NO_POINT)), at(("write", "dwrite"), ("fsync", "fdatasync")))),
    Shape("eof-truncate", "btrfs/211: a new file; two preallocations past its end and fsync; a fallocate of its first "
          "block and fsync; a truncate up to the end of both and fsync", (
              at(("creat",), (NO_POINT,)), at(("falloc-eof",), (NO_POINT,)), at(("prealloc",), ("fsync", NO_POINT)),
              at(("prealloc",), ("fsync", "fdatasync")), at(("prealloc", "truncate"), ("fsync", "fdatasync")))),
    Shape("clone-hole", "btrfs/231: a file made; ranges written around a hole and synced; truncated down and "
          "fsynced; the hole cloned past the end and fsynced", (
              at(("creat",), (NO_POINT,)), at(("clone-hole",), ("sync", NO_POINT)),
              at(("clone-hole",), ("fsync", "fdatasync")), at(("clone-hole",), ("fsync", "fdatasync")))),
)
NAMES = tuple(s.name for s in SHAPES)


def shape_named(name: str) -> Shape:
    """The shape called `name`; UsageError on any other."""
    found = next((s for s in SHAPES if s.name == name), None)
    if found is None:
        raise UsageError(f"unknown shape {name!r}: expected one of {', '.join(NAMES)}")
    return found
