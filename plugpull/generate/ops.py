"""The operation table of generated workloads, and how each operation changes the model tree.

`CORE_OPS` is the first table and is fixed: the ids of the workloads made of its operations and its persistence
points (`FIRST_FAMILIES`, `FIRST_PERSISTENCE`) are their ranks in its enumeration, so changing it (an operation
added, removed or moved, a size changed) changes ids; `test_generate.py` pins its digest. The later tables
(`TABLES`, in the order they came: docs/generate.md names each, and each's own module its model) are numbered after
all of the tables' before them (space.py), so no earlier id moved. Each row is an operation family (the name
`--ops` takes), a variant and its operands, all among the fixed names of `tree`.

A name no operation has touched yet is resolved when first needed: an operation that needs it to exist
makes the workload's setup create it (a file of `INITIAL_SIZE` bytes, or a directory), one that needs it absent
takes it as absent; a renamed directory of the setup takes its files. Setup runs first, made durable by `sync`."""

from dataclasses import dataclass

from plugpull.generate.clonehole import FAMILY as CLONE_HOLE, QUOTA, ROWS as CLONE_ROWS, TABLE as SIXTEENTH, \
    clone_hole_data, clone_hole_fits
from plugpull.generate.names import NAME_FAMILIES, NAME_ROWS, TWINS, name_step_allowed
from plugpull.generate.reach import ANY_POINTS, REFLINKS, changes_nothing
from plugpull.generate.selfclone import CLONES, SELF_CLONES, SELF_FAMILIES
from plugpull.generate.snapshot import FAMILY as SNAPSHOT, SNAPSHOT_ROWS, snapshot_step, snapshots_there
from plugpull.generate.holes import FAMILY as HOLES, HOLE_ROWS, hole_data
from plugpull.generate.fourth import FAMILY as FOURTH_NAME, FOURTH_ROWS, TWINS as FOURTH_TWINS
from plugpull.generate.prealloc import FAMILY as PREALLOC, PREALLOC_ROWS, changed, prealloc_data
from plugpull.generate.tmpfile import FAMILY as TMPFILE, TMPFILE_ROWS, tmpfile_step
from plugpull.generate.sizes import MMAPS, PUNCHES, RANGED, RESIZES, TINIES, sized_data, sized_fits
from plugpull.generate.unlinked import OPEN_POINTS, last_name
from plugpull.generate.tree import BLOCK, DIR, DIRS, FIFO, FILE, FILES, FOURTH, NAMES, NESTED, NESTED_DIR, NESTED_FILES, \
    ROOT, SYMLINK, THIRD, Inode, Tree, parent, sibling, under, with_xattr

INITIAL_SIZE = 16384
SETUP_BYTE = dict(zip(("A/foo", "A/bar", "B/foo", "B/bar", "A/C/foo", "A/C/bar", "A/baz", "B/baz"), range(0x41, 0x49)))
XATTR = "user.pp"

# write variants: offset from the file's size, length
WRITES = {"append": (lambda size: size, 4096), "overwrite": (lambda size: 0, 4096),
          "unaligned": (lambda size: 3000, 5000), "past-eof": (lambda size: size + 8192, 4096)}
# fallocate modes: the xfs_io command, and what it does to the data
FALLOCS = {"default": "falloc 8192 32768", "keep-size": "falloc -k 8192 32768",
           "punch-hole": "fpunch 4096 8192", "zero-range": "fzero 4096 8192"}
TRUNCATE_TO = 2500
# direct-I/O write variants (O_DIRECT, offset and length aligned to BLOCK): offset from the size
DWRITES = {"overwrite": lambda size: 0, "append": lambda size: -(-size // BLOCK) * BLOCK}
# mmap write variants: offset from the size; `extend` first extends the file by ftruncate
MMAPWRITES = {"overwrite": lambda size: 0, "extend": lambda size: size}
# fallocate at the end of the file (offset: its size): the xfs_io command, the length, and whether
# the size stays (FALLOC_FL_KEEP_SIZE: the blocks past the end are allocated, the size not changed)
EOF_FALLOCS = {"keep-size": ("falloc -k", 2 * BLOCK, True), "zero": ("fzero", BLOCK, False),
               "zero-keep-size": ("fzero -k", BLOCK, True)}
# collapse and insert range (FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE): the xfs_io command;
# both take the block at offset BLOCK, BLOCK long (block-aligned, as both require)
SHIFTS = {"collapse": "fcollapse", "insert": "finsert"}

SIZE_FAMILIES = ("punch", "resize", "tiny", "mmap")  # the ninth table's
FIRST_FAMILIES = ("creat", "mkdir", "write", "falloc", "truncate", "link", "unlink", "symlink", "rename",
                  "setxattr", "removexattr")
FIRST_PERSISTENCE = ("fsync", "fdatasync", "sync")
# what each table added, in the order they came: (operation families, persistence points)
TABLES = ((FIRST_FAMILIES, FIRST_PERSISTENCE), (("dwrite", "mmapwrite"), ("msync",)), (("rmdir",), ()),
          (("falloc-eof", "collapse", "insert"), ()), (("nested",), ()),
          (("evict", "reflink", "copy"), tuple(ANY_POINTS)), (("unlink-open",), tuple(OPEN_POINTS)), (("again",), ()),
          (SIZE_FAMILIES, tuple(RANGED)), (NAME_FAMILIES, ()), (SELF_FAMILIES, ()), ((SNAPSHOT,), ()),
          ((TMPFILE,), ()), ((HOLES,), ()), ((FOURTH_NAME,), ()), SIXTEENTH)
SHAPE_FAMILIES = (PREALLOC,)  # in no table: only a shape that names one takes its rows (`prealloc`)
FAMILIES = tuple(f for families, _ in TABLES for f in families) + SHAPE_FAMILIES
PERSISTENCE = tuple(p for _, points in TABLES for p in points)  # msync(MS_SYNC): only right after an mmap write
CALLS = {**ANY_POINTS, **OPEN_POINTS, **dict.fromkeys(RANGED, "msync")}  # the later tables' points, by their call
MODELS = {**dict.fromkeys(SIZE_FAMILIES, sized_data), HOLES: hole_data, CLONE_HOLE: clone_hole_data, PREALLOC: prealloc_data}
FITS = {**dict.fromkeys(SIZE_FAMILIES, sized_fits), CLONE_HOLE: clone_hole_fits}  # the sizes they run on
DATA_FAMILIES = ("write", "dwrite", "mmapwrite", "falloc", "truncate", "falloc-eof", "collapse", "insert",
                 *SIZE_FAMILIES, HOLES, CLONE_HOLE, PREALLOC)


@dataclass(frozen=True)
class Op:
    family: str
    variant: str
    args: tuple[str, ...]

    def text(self) -> str:
        name = f"{self.family}.{self.variant}" if self.variant else self.family
        return " ".join((name, *self.args))


@dataclass(frozen=True)
class Persist:
    kind: str  # fsync, fdatasync, sync or msync; fsync-any, fdatasync-any: of a name the step did not touch;
    # fsync-open, fdatasync-open: of the file unlink-open held open (`path`: the name it had);
    # msync-head, msync-tail: msync of one page of the mapping (after the ninth table's mmap)
    path: str | None = None

    @property
    def call(self) -> str:
        """The call it makes: fsync-any's and fsync-open's is fsync."""
        return CALLS.get(self.kind, self.kind)

    def text(self) -> str:
        return self.kind if self.path is None else f"{self.kind} {self.path}"


def _table() -> tuple[Op, ...]:
    pairs = [(s, d) for s in FILES for d in FILES if s != d]
    rows = [Op("creat", "", (f,)) for f in FILES]
    rows += [Op("mkdir", "", (d,)) for d in DIRS]
    rows += [Op("write", v, (f,)) for f in FILES for v in WRITES]
    rows += [Op("falloc", v, (f,)) for f in FILES for v in FALLOCS]
    rows += [Op("truncate", "", (f,)) for f in FILES]
    rows += [Op("link", "", p) for p in pairs]
    rows += [Op("unlink", "", (f,)) for f in FILES]
    rows += [Op("symlink", "", (f,)) for f in FILES]  # f -> its sibling's name
    rows += [Op("rename", "file", p) for p in pairs]  # to a free name
    rows += [Op("rename", "over", p) for p in pairs]  # over an existing file
    rows += [Op("rename", "dir", (s, d)) for s in DIRS for d in DIRS if s != d]
    rows += [Op("setxattr", "", (f,)) for f in FILES]
    rows += [Op("removexattr", "", (f,)) for f in FILES]
    return tuple(rows)


CORE_OPS = _table()
LATER_OPS = tuple([Op("dwrite", v, (f,)) for f in FILES for v in DWRITES] +
                  [Op("mmapwrite", v, (f,)) for f in FILES for v in MMAPWRITES])
RMDIR_OPS = tuple(Op("rmdir", "", (d,)) for d in DIRS)  # of an empty directory: ACE's remove(3) of one
SIZED = ("collapse", "insert", "reflink", *SIZE_FAMILIES, *SELF_FAMILIES, CLONE_HOLE)  # validity: the exact size
RANGE_OPS = tuple([Op("falloc-eof", v, (f,)) for f in FILES for v in EOF_FALLOCS] +
                  [Op(family, "", (f,)) for f in FILES for family in SHIFTS])
# the nested directory A/C (ACE's): made, a file made in it, moved into it from A or B and out of it back,
# and unlinked in it; each is its plain twin (`plain`) on the nested names
NESTED_MOVES = tuple((src, f"{NESTED_DIR}/{src.rpartition('/')[2]}") for src in FILES)
NESTED_OPS = tuple([Op("nested", "mkdir", (NESTED_DIR,))] + [Op("nested", "creat", (f,)) for f in NESTED_FILES] +
                   [Op("nested", "rename", move) for move in NESTED_MOVES] +
                   [Op("nested", "rename", move[::-1]) for move in NESTED_MOVES] +
                   [Op("nested", "unlink", (f,)) for f in NESTED_FILES])
# inode eviction between steps; reflink (FICLONE, FICLONERANGE) and copy_file_range of one file into another
PAIRS = tuple((s, d) for s in FILES for d in FILES if s != d)
REACH_OPS = tuple([Op("evict", "", ())] + [Op("reflink", v, p) for p in PAIRS for v in REFLINKS] +
                  [Op("copy", "", p) for p in PAIRS])
UNLINKED_OPS = tuple(Op("unlink-open", "", (f,)) for f in FILES)  # of a file's last name, held open
AGAIN_OPS = (Op("again", "", ()),)  # no operation: a point right after the last one (`again`)
# other offsets and sizes (`sizes`): hole punches, a truncate down and up, a tiny file, a fallocate past its end, mmap
SIZE_OPS = tuple([Op("punch", v, (f,)) for f in FILES for v in PUNCHES] +
                 [Op("resize", v, (f,)) for f in FILES for v in RESIZES] +
                 [Op("tiny", v, (f,)) for f in FILES for v in TINIES] +
                 [Op("mmap", v, (f,)) for f in FILES for v in MMAPS])
NAME_OPS = tuple(Op(*row) for row in NAME_ROWS)  # a third name, links into A/C, A/C moved (`names`)
OPS = CORE_OPS + LATER_OPS + RMDIR_OPS + RANGE_OPS + NESTED_OPS + REACH_OPS + UNLINKED_OPS + AGAIN_OPS + SIZE_OPS + \
    NAME_OPS + tuple(Op(family, v, (f,)) for family in SELF_FAMILIES for f in FILES for v in SELF_CLONES) + \
    tuple(Op(*row) for row in SNAPSHOT_ROWS + TMPFILE_ROWS + HOLE_ROWS + FOURTH_ROWS + CLONE_ROWS + PREALLOC_ROWS)
OWN_STEPS = {**CLONES, SNAPSHOT: snapshot_step, TMPFILE: tmpfile_step, "evict": changes_nothing, QUOTA: changes_nothing}


def refusal(op: Op, refused) -> str | None:
    """The entry of `refused` (operation families, and `family.variant` names) that names `op`."""
    return next((k for k in (op.family, f"{op.family}.{op.variant}") if k in refused), None)


def plain(op: Op) -> Op:
    """A nested, tenth- or fifteenth-table operation as the first table's operation it is (`names.TWINS`)."""
    if twin := TWINS.get((op.family, op.variant)) or FOURTH_TWINS.get((op.family, op.variant)):
        return Op(*twin, op.args)
    return Op(op.variant, "file" if op.variant == "rename" else "", op.args) if op.family == "nested" else op


def up_to(table: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The operation families (the shapes' own too) and persistence points of the first `table` tables (1-based)."""
    return (tuple(f for families, _ in TABLES[:table] for f in families) + SHAPE_FAMILIES,
            tuple(p for _, points in TABLES[:table] for p in points))


class Sim:
    """A tree while a workload is being built: which names are still untouched, what the
    setup had to create, and whether the last step ended with a persistence point (`pointed`;
    the setup's ack 0 counts: what `again` needs before it). `apply` returns False, leaving the
    Sim half changed, when the operation is invalid there: apply it to a copy."""

    def __init__(self, tree: Tree | None = None, known: set | None = None, setup: list | None = None,
                 pointed: bool = True):
        self.tree = tree or Tree()
        self.known = set(NAMES) if tree is not None and known is None else (known or set())
        self.setup = setup or []
        self.pointed = pointed
        self._keys: dict[tuple[bool, bool], tuple] = {}
        self._twin: Sim | None = None

    def copy(self) -> "Sim":
        return Sim(self.tree.copy(), set(self.known), list(self.setup), self.pointed)

    def ended(self, pointed: bool) -> "Sim":
        """This Sim with the step ended by a point or not: itself, or its twin, which shares its
        tree, names, setup and keys (neither is changed after: `Space.choices` applies to copies)."""
        if pointed == self.pointed:
            return self
        if self._twin is None:
            self._twin = Sim(self.tree, self.known, self.setup, pointed)
            self._twin._keys, self._twin._twin = self._keys, self
        return self._twin

    def touch(self, path: str) -> None:
        self.known.update(p for p in NAMES if under(p, path))

    def exists(self, path: str, kinds=(FILE,)) -> bool:
        """`path` is there as one of `kinds`; an untouched name is put in the setup."""
        if path == ROOT:
            return DIR in kinds
        if path in self.known:
            return self.tree.kind(path) in kinds
        if not self.exists(parent(path), (DIR,)):
            return False
        kind = FILE if FILE in kinds else DIR if DIR in kinds else None
        if kind is None:
            return False
        node = Inode(FILE, bytes([SETUP_BYTE[path]]) * INITIAL_SIZE) if kind == FILE else Inode(DIR)
        self.tree.paths[path] = self.tree.new_inode(node)
        self.known.add(path)
        self.setup.append(path)
        return True

    def absent(self, path: str) -> bool:
        """`path` is free, in an existing directory; an untouched name is taken as absent."""
        if path in self.known and self.tree.kind(path) is not None:
            return False
        self.touch(path)
        return self.exists(parent(path), (DIR,))

    def key(self, sized: bool = True, nested: bool = True, third: bool = True) -> tuple:
        """What decides which operations are valid from here on: each name's state, hard
        links told apart by the order their inodes first appear, and each file's size (`sized`:
        collapse and insert range may come, whose validity the exact size decides; else only
        whether it holds a whole page, which is all the other operations ask and counts many
        fewer shapes); the nested names only where nested operations may come (`nested`), the third
        and fourth only where theirs may (`third`). Taken once: a Sim is not changed once applied."""
        if (sized, nested, third) not in self._keys:
            names = DIRS + FILES + (NESTED if nested else ()) + (THIRD + FOURTH if third else ())
            self._keys[sized, nested, third] = self._shape(sized, names) + snapshots_there(self.tree)
        return self._keys[sized, nested, third]

    def _shape(self, sized: bool, names: tuple[str, ...]) -> tuple:
        order: dict[int, int] = {}
        out = []
        for p in names:
            kind = self.tree.kind(p) if p in self.known else "u"
            if kind == FILE:
                ino = self.tree.paths[p]
                size = len(self.tree.inodes[ino].data)
                out.append((order.setdefault(ino, len(order)), bool(self.tree.inodes[ino].xattrs),
                            size if sized else size >= BLOCK))
            else:
                out.append(kind)
        return tuple(out)


def pwrite(data: bytes, offset: int, length: int, fill: int) -> bytes:
    end = offset + length
    buf = bytearray(data.ljust(end, b"\0"))
    buf[offset:end] = bytes([fill]) * length
    return bytes(buf)


def zero(data: bytes, offset: int, length: int, keep_size: bool) -> bytes:
    size = len(data) if keep_size else max(len(data), offset + length)
    buf = bytearray(data.ljust(size, b"\0"))
    buf[offset:min(offset + length, size)] = bytes(max(0, min(offset + length, size) - offset))
    return bytes(buf)


def write_range(op: Op, size: int) -> tuple[int, int]:
    """(offset, length) of a write, direct-I/O write or mmap write on a file of `size` bytes."""
    if op.family == "write":
        offset_of, length = WRITES[op.variant]
        return offset_of(size), length
    return {"dwrite": DWRITES, "mmapwrite": MMAPWRITES}[op.family][op.variant](size), BLOCK


def new_data(op: Op, data: bytes, fill: int) -> bytes:
    """A file's contents after a write, fallocate or truncate."""
    if op.family in ("write", "dwrite", "mmapwrite"):
        return pwrite(data, *write_range(op, len(data)), fill)
    if op.family == "truncate":
        return data[:TRUNCATE_TO].ljust(TRUNCATE_TO, b"\0")
    if op.family == "falloc-eof":
        _, length, keep_size = EOF_FALLOCS[op.variant]
        return data if keep_size else data + bytes(length)
    if op.family in MODELS:
        return MODELS[op.family](op.family, op.variant, data, fill)
    if op.family == "collapse":
        return data[:BLOCK] + data[2 * BLOCK:]
    if op.family == "insert":
        return data[:BLOCK] + bytes(BLOCK) + data[BLOCK:]
    if op.variant == "default":
        return data.ljust(max(len(data), 8192 + 32768), b"\0")
    if op.variant == "keep-size":
        return data
    return zero(data, 4096, 8192, keep_size=op.variant == "punch-hole")


def fits(op: Op, size: int, anyway: bool = False) -> bool:
    """Whether `op` can run on a file of `size` bytes: an mmap write over a page wholly past the
    end is SIGBUS (no page of the file); collapse range must leave data after the range, and
    insert range must start inside the file, else EINVAL (fallocate(2)); the ninth and sixteenth
    tables' as `FITS` says, which also says which still run `anyway` (`apply`'s `lenient`)."""
    if op.family == "mmapwrite" and op.variant == "overwrite":
        return size >= BLOCK
    if op.family == "collapse":
        return size > 2 * BLOCK
    if op.family == "insert":
        return size > BLOCK
    return op.family not in FITS or any(FITS[op.family](op.family, op.variant, size, a) for a in {False, anyway})


def fill_byte(step: int) -> int:
    """The byte operation `step` (1-based) writes: 'a', 'b', 'c'..."""
    return 0x60 + step


def apply(sim: Sim, op: Op, step: int, lenient: bool = False) -> bool:
    """Perform `op` (the workload's operation number `step`) on `sim`; False if it is invalid.
    `lenient`: on a file of a size the workload did not plan, because the filesystem refused an
    earlier step, an operation the program still runs as planned is done (`fits`)."""
    tree, args = sim.tree, op.args
    if op.family in (*DATA_FAMILIES, "setxattr"):
        if not sim.exists(args[0]):
            return False
        node = tree.inode(args[0])
        if not fits(op, len(node.data), lenient):
            return False
        if op.family == "setxattr":
            tree.set_inode(args[0], with_xattr(node, XATTR, f"v{step}"))
        else:
            tree.set_inode(args[0], changed(op, node, new_data(op, node.data, fill_byte(step))))
        return True
    if op.family == "removexattr":
        if not sim.exists(args[0]) or XATTR not in dict(tree.inode(args[0]).xattrs):
            return False
        tree.set_inode(args[0], with_xattr(tree.inode(args[0]), XATTR, None))
        return True
    if op.family == "again":
        return sim.pointed  # nothing is done: only a point after a point (a step without one adds nothing)
    if op.family in OWN_STEPS:
        return OWN_STEPS[op.family](sim, op)
    return name_step_allowed(sim, op.family, op.variant, op.args) and _namespace(sim, op)


def _namespace(sim: Sim, op: Op) -> bool:
    op = plain(op)
    tree, args = sim.tree, op.args
    if op.family in ("creat", "mkdir", "symlink"):
        if not sim.absent(args[0]):
            return False
        node = {"creat": Inode(FILE), "mkdir": Inode(DIR), "symlink": Inode(SYMLINK, target=sibling(args[0]))}
        tree.paths[args[0]] = tree.new_inode(node[op.family])
        return True
    if op.family in ("unlink", "unlink-open"):
        if not sim.exists(args[0], (FILE, SYMLINK, FIFO) if op.family == "unlink" else (FILE,)):
            return False
        if op.family == "unlink-open" and not last_name(tree, args[0]):
            return False
        sim.touch(args[0])
        tree.unlink(args[0])
        return True
    if op.family == "rmdir":
        return _rmdir(sim, args[0])
    if op.family == "link":
        if not sim.exists(args[0], (FILE, FIFO)) or not sim.absent(args[1]):
            return False
        tree.paths[args[1]] = tree.paths[args[0]]
        return True
    return _rename(sim, op)


def _rmdir(sim: Sim, path: str) -> bool:
    """rmdir(2) of an empty directory: a name in it no operation touched yet is taken as absent
    (a directory from the setup is made without it)."""
    if not sim.exists(path, (DIR,)) or sim.tree.children(path):
        return False
    sim.touch(path)
    sim.tree.unlink(path)
    return True


def _rename(sim: Sim, op: Op) -> bool:
    tree, (src, dst) = sim.tree, op.args
    if op.variant in ("file", "over"):
        if not sim.exists(src, (FILE, SYMLINK, FIFO)):
            return False
        if op.variant == "file" and not sim.absent(dst):
            return False
        if op.variant == "over" and not sim.exists(dst, (FILE, SYMLINK, FIFO)):
            return False
    else:
        if not sim.exists(src, (DIR,)):
            return False
        for child in (p for p in FILES if parent(p) == src and p not in sim.known):
            sim.exists(child)  # a directory from the setup moves with its files
        if dst in sim.known and tree.kind(dst) is not None:
            if tree.kind(dst) != DIR or tree.children(dst):
                return False
        sim.touch(dst)
    sim.touch(src)
    tree.rename(src, dst)
    return True
