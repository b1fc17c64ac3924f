"""The model oracle: what a generated workload's completed persistence points make durable.

A table of rules, each with its trigger (sync, fsync, fdatasync or msync of a file, fsync of a directory), the
filesystems it holds on and its source. A rule owes facts: a path's `kind` (None: absent), a file's `size`, `digest`,
`nlink`, `xattrs`, a symlink's `target`, a file's `extents` (`prealloc`). Facts owed at point k stand until a later
point owes the same fact anew. A crash after point k may come while later operations run, so what they change is
relaxed: a later value of a name's kind, link count, xattrs or target is accepted too (each such change is atomic),
and data a later operation changes is owed no more (a write may be torn). `posix` holds only what POSIX promises;
`ext4`, `xfs`, `btrfs` and `f2fs` add what Linux documents and what they are relied on for. `f2fs` is F2FS with its
default fsync_mode=posix: `strict` would add a checkpoint when the fsynced file's directory changed since the last one
(so a rename in it persists with a new file that took the old name, fstests generic/342), which no rule here owes."""

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from plugpull.errors import UsageError
from plugpull.generate.delalloc import delayed_only
from plugpull.generate.ops import plain, refusal
from plugpull.generate.prealloc import EXTENTS_SOURCE, owed_extents
from plugpull.generate.space import Workload
from plugpull.generate.tree import DIR, FILE, NAMES, OPTIONAL, SYMLINK, Tree, all_facts, digest, fact, name_key, \
    parent, under
from plugpull.generate.sizes import RANGED, msync_owed
from plugpull.generate.unlinked import OPEN_POINTS, gone_names
from plugpull.testbed.features import SEP
from plugpull.testbed.fs import FILESYSTEMS

PROFILES = ("posix", "ext4", "xfs", "btrfs", "f2fs")
LINUX = ("ext4", "xfs", "btrfs", "f2fs")
FIELDS = ("kind", "size", "digest", "nlink", "xattrs", "target", "extents")
DATA = ("size", "digest")  # owed no more once a later operation changes them
REMAPS = frozenset({"reflink", "self-clone", "clone-hole.clone"})  # what clones (remap_file_range): files, in one


# what each filesystem refuses (EOPNOTSUPP), by its kernel type or a feature profile (`f2fs+compress`:
# with that option, whatever its base row): a family, `family.variant` (refused by the variant's mode)
# or a setup's extra. The program goes on with it not done, and so does the model (Workload.refused)
REFUSED = {
    # btrfs_fallocate (fs/btrfs/file.c) takes only KEEP_SIZE, PUNCH_HOLE and ZERO_RANGE: any other
    # mode, COLLAPSE_RANGE and INSERT_RANGE among them, is -EOPNOTSUPP before anything is done
    "btrfs": frozenset({"collapse", "insert"}),
    # f2fs_fallocate (fs/f2fs/file.c), on a compressed file (f2fs_compressed_file: every file under
    # compress_extension=*): PUNCH_HOLE, COLLAPSE_RANGE, ZERO_RANGE and INSERT_RANGE are -EOPNOTSUPP
    # (since the compression commit 4c8ff7095bef, Linux 5.6); plain and KEEP_SIZE allocation are done
    # reflink (FICLONE, FICLONERANGE) needs the filesystem's remap_file_range, which ext4 and f2fs do not have
    # (vfs_clone_file_range, fs/remap_range.c: -EOPNOTSUPP), nor xfs without its reflink feature
    # (xfs_reflink_remap_prep): xfs-2008's v4 format has none (mkfs.xfs wants crc=1 for it); so does a clone within
    # one file. copy_file_range falls back to a copy everywhere. Snapshots and quotas are btrfs's own; ext4 and f2fs
    # hold an inode's xattrs in one block (`setups`)
    "ext4": REMAPS | {"snapshot", "quota", "xattrs"}, "f2fs": REMAPS | {"snapshot", "quota", "xattrs"},
    "xfs": frozenset({"snapshot", "quota"}), "xfs-2008": REMAPS,
    "f2fs+compress": frozenset({"falloc.punch-hole", "falloc.zero-range", "falloc-eof.zero", "holes.punch",
                                "falloc-eof.zero-keep-size", "collapse", "insert", "punch", "holes.punch-end"}),
}


def refusals(fs: str) -> frozenset:
    """What filesystem `fs` (a row, a feature profile, or an oracle profile's name) refuses:
    its kernel type's refusals, its row's (by name: a format that lacks a feature), and each
    of its options'."""
    row = FILESYSTEMS[fs] if fs in FILESYSTEMS else None
    kind = row.mount_type if row else fs
    keys = {kind, fs.split(SEP)[0], *(f"{kind}{SEP}{option}" for option in (row.features if row else ()))}
    return frozenset().union(*(REFUSED.get(k, ()) for k in keys))


def rules_of(fs: str) -> str:
    """The oracle profile filesystem `fs` is judged by (an oracle profile's name is its own;
    posix for a filesystem the oracle has no rules of)."""
    if fs in PROFILES:
        return fs
    return FILESYSTEMS[fs].rules if fs in FILESYSTEMS and FILESYSTEMS[fs].rules in PROFILES else "posix"


@lru_cache(maxsize=256)
def on_profile(workload: Workload, fs: str) -> Workload:
    """`workload` as it runs on `fs`: what it refuses not done, and what it had refused (a profile adds none)."""
    no = refusals(fs)
    refused = workload.refused | ({workload.extra} & no) | {k for s in workload.steps if (k := refusal(s.op, no))}
    return workload if refused == workload.refused else replace(workload, refused=frozenset(refused))


class AnyOf(frozenset):
    """A fact a rule owes as one of several values."""


@dataclass(frozen=True)
class Context:
    """A persistence point being applied: the workload, the step it follows, the tree then."""

    workload: Workload
    step: int
    tree: Tree
    path: str | None

    def inode_history(self) -> list[Tree]:
        return self.workload.trees[:self.step + 1]

    def moved_with_a_dir(self, path: str) -> bool:
        """`path` lies in a directory renamed so far (A/C moved too): a file's fsync need not persist
        that rename (xfs logs only the directories and the moved directory's inode); a file made at
        a moved directory's old name (`move-dir.creat`) is not in it."""
        moves = [plain(s.op) for s in self.workload.steps[:self.step]]
        dirs = {d for op in moves if (op.family, op.variant) == ("rename", "dir") for d in op.args}
        return any(under(path, d) for d in dirs if path != d or self.tree.kind(path) == DIR)


def named(workload: Workload) -> tuple[str, ...]:
    """The names whose facts a point may owe: the first table's, and a nested or third one (or a setup's
    many links) only where a tree of the workload has it (one that never has it owes of it what it owed before)."""
    fixed = tuple(p for p in NAMES if p not in OPTIONAL or any(p in t.paths for t in workload.trees))
    return fixed + tuple(sorted({p for t in workload.trees for p in t.paths} - set(NAMES), key=name_key))


def sync_all(ctx: Context):
    return [f for path in named(ctx.workload) for f in all_facts(ctx.tree, path)]


def file_data(ctx: Context):
    """The file's data, at the name the point names it by. Where that name held another file
    since the setup (a rename or a link over it), the point owes the data, not the name: the
    name may still hold what it held before, whose data is then owed nothing new."""
    ino = ctx.tree.paths[ctx.path]
    others = [t for t in ctx.inode_history() if t.paths.get(ctx.path) not in (None, ino)]
    return [(ctx.path, n, AnyOf({fact(ctx.tree, ctx.path, n), *(fact(t, ctx.path, n) for t in others)})
             if others else fact(ctx.tree, ctx.path, n)) for n in DATA]


def file_nlink(ctx: Context):
    return [(ctx.path, "nlink", fact(ctx.tree, ctx.path, "nlink"))]


def file_xattrs(ctx: Context):
    return [(ctx.path, "xattrs", fact(ctx.tree, ctx.path, "xattrs"))]


def file_names(ctx: Context):
    """Every name the file has now, and every name it had since the setup and lost: no longer
    this file (absent, or what is there now, whose own creation nothing forced out)."""
    ino = ctx.tree.paths[ctx.path]
    had = {p for t in ctx.inode_history() for p in t.names_of(ino)}
    now = ctx.tree.names_of(ino)
    return [(p, "kind", FILE) for p in now if not ctx.moved_with_a_dir(p)] + [
        (p, "kind", AnyOf({None, ctx.tree.kind(p)})) for p in sorted(had - set(now), key=name_key)
        if not ctx.moved_with_a_dir(p)]


def unlinked_names(ctx: Context):
    """After an fsync of a file with no name left: each name it had is no longer it."""
    return [(p, "kind", AnyOf({None, now})) for p, now in gone_names(ctx.inode_history(), ctx.path)
            if not ctx.moved_with_a_dir(p)]


def new_file_name(ctx: Context):
    """The name of a file the workload created (an unsynced setup's files too), while it is
    the only name it ever had."""
    ino = ctx.tree.paths[ctx.path]
    history = ctx.inode_history()
    created = ino not in history[0].inodes or not ctx.workload.synced
    names = {p for t in history for p in t.names_of(ino)}
    return [(ctx.path, "kind", FILE)] if created and names == {ctx.path} else []


def ranged_data(ctx: Context):  # after an msync of one page of the mapping (`sizes.msync_owed`)
    ino = ctx.tree.paths[ctx.path]
    sizes, datas = msync_owed(ctx.workload.steps[ctx.step - 1].persist.kind,
                              [t.inodes[ino].data for t in ctx.inode_history() if ino in t.inodes])
    return [(ctx.path, "size", AnyOf(sizes)), (ctx.path, "digest", AnyOf(map(digest, datas)))]


def dir_entries(ctx: Context):
    if ctx.moved_with_a_dir(ctx.path):
        return []
    out = []
    for p in named(ctx.workload):
        if parent(p) == ctx.path:
            out.append((p, "kind", ctx.tree.kind(p)))
            if ctx.tree.kind(p) == SYMLINK:
                out.append((p, "target", fact(ctx.tree, p, "target")))
    return out


def ext4_replace_via_rename(ctx: Context):
    """A directory fsync that owes the entry of a file renamed over an existing one owes the
    data the file had at the rename too, if ext4 forced it out before the rename (`delayed_only`)
    and the file still has it (a sync or the file's own fsync owe its data anyway)."""
    out = []
    trees = ctx.inode_history()
    for i in range(1, ctx.step + 1):
        op = ctx.workload.steps[i - 1].op
        if op.family != "rename" or op.variant != "over" or parent(op.args[1]) != ctx.path:
            continue
        dst = op.args[1]
        if trees[i - 1].kind(dst) != FILE or trees[i].kind(dst) != FILE or not delayed_only(ctx.workload, i):
            continue
        if ctx.tree.paths.get(dst) == trees[i].paths.get(dst) and \
                fact(ctx.tree, dst, "digest") == fact(trees[i], dst, "digest"):
            out += [(dst, n, fact(ctx.tree, dst, n)) for n in DATA]
    return out


@dataclass(frozen=True)
class Rule:
    name: str
    trigger: str  # sync, fsync-file, fdatasync-file, msync-file, msync-range, fsync-dir or fsync-unlinked
    filesystems: tuple[str, ...]
    owes: Callable[[Context], list]
    source: str


RULES = (
    Rule("sync-all", "sync", LINUX, sync_all,
         "sync(2), Linux man-pages: sync writes all pending metadata and data and, on Linux, waits for it "
         "(POSIX lets it return before, so posix owes nothing)"),
    Rule("fsync-data", "fsync-file", PROFILES, file_data,
         "POSIX fsync(): all data of the file is transferred to the storage device (a write through a "
         "shared mapping changes the file: POSIX mmap(), MAP_SHARED; an O_DIRECT write is owed no more "
         "than a buffered one: open(2), Linux man-pages)"),
    Rule("fdatasync-data", "fdatasync-file", PROFILES, file_data,
         "POSIX fdatasync(): synchronized I/O data integrity: the data and what is needed to read it back, the size"),
    Rule("fsync-nlink", "fsync-file", LINUX, file_nlink,
         "fsync(2), Linux man-pages: fsync also flushes the file's metadata (inode(7): the link count)"),
    Rule("fsync-xattrs", "fsync-file", LINUX, file_xattrs,
         "relied on: ext4 and xfs journal an xattr change with the inode fsync commits; btrfs logs an inode's "
         "xattrs with it; f2fs keeps them in the inode's own node blocks, which its fsync writes"),
    Rule("fsync-names", "fsync-file", LINUX, file_names,
         "relied on: fsync of a new file persists its name (ext4 commits the transaction holding the create, "
         "link or rename; xfs forces the log to the inode's last change; btrfs logs the inode's names; f2fs "
         "checkpoints when the parent is not yet checkpointed, after a rename or link, or for a hard-linked "
         "file, and else marks the inode's node for roll-forward to restore its entry)"),
    Rule("fsync-unlinked-names", "fsync-unlinked", LINUX, unlinked_names,
         "relied on (fstests generic/764): fsync of a file whose last name was unlinked while it was open "
         "persists the unlink (the inode's link count, 0, is its metadata: ext4 commits the transaction holding "
         "the unlink; xfs forces the log to the inode's last change; btrfs logs the inode's deletion, since "
         "5e85262e542d; f2fs checkpoints for a link count other than 1). fdatasync owes nothing: no name "
         "reads the data back"),
    Rule("fdatasync-new-name", "fdatasync-file", LINUX, new_file_name,
         "relied on: a new file's name is needed to read its data back, and is logged with the inode's creation"),
    Rule("msync-data", "msync-file", PROFILES, file_data,
         "POSIX msync(), MS_SYNC: the modified data of the mapped pages is written, with synchronized I/O "
         "data integrity completion (the size too); the mapping is the whole file"),
    Rule("msync-new-name", "msync-file", LINUX, new_file_name,
         "relied on: Linux msync(MS_SYNC) on a shared file mapping syncs the mapped range by vfs_fsync_range() "
         "with datasync set (mm/msync.c), fdatasync's path, so it owes what fdatasync-new-name owes"),
    Rule("msync-range-data", "msync-range", PROFILES, ranged_data, "POSIX msync(), MS_SYNC: the modified data "
         "of the pages in the range; Linux syncs that range of the file alone (mm/msync.c, vfs_fsync_range())"),
    Rule("msync-range-new-name", "msync-range", LINUX, new_file_name, "relied on: as msync-new-name, for the range"),
    Rule("fsync-extents", "fsync-file", LINUX, owed_extents, EXTENTS_SOURCE),
    Rule("fsync-dir-entries", "fsync-dir", LINUX, dir_entries,
         "fsync(2), Linux man-pages: an explicit fsync of the directory persists its entries"),
    Rule("ext4-replace-via-rename", "fsync-dir", ("ext4",), ext4_replace_via_rename,
         "ext4 documentation, auto_da_alloc (default), as fs/ext4 does it: ext4_rename, replacing an existing "
         "file, calls ext4_alloc_da_blocks on the renamed one, which flushes it only if it has delayed-allocation "
         "blocks (i_reserved_data_blocks); their allocation (ext4_map_blocks) puts them on the ordered list the "
         "rename's commit writes first (data=ordered; a fast commit writes the same list: "
         "ext4_fc_submit_inode_data_all). So owed only where all written since the file's data was last made "
         "durable was into blocks it did not have; an overwrite of allocated blocks is owed nothing"),
)


def trigger_of(workload: Workload, step: int) -> tuple[str, str | None]:
    """The rules' trigger of the point after `step`: by the call it makes, whether or not the
    step touched its name (fsync-any is fsync: what fsync of a file or directory owes does not
    depend on which operation came last)."""
    persist = workload.steps[step - 1].persist
    if persist.call == "sync":
        return "sync", None
    if persist.kind in RANGED:
        return "msync-range", persist.path
    if persist.call == "msync":
        return "msync-file", persist.path
    if persist.kind in OPEN_POINTS:
        return f"{persist.call}-unlinked", persist.path
    kind = workload.trees[step].kind(persist.path)
    return f"{persist.call}-{'dir' if kind == DIR else 'file'}", persist.path


def rules_for(fs: str) -> tuple[Rule, ...]:
    if fs not in PROFILES:
        raise UsageError(f"unknown filesystem profile {fs!r}: expected one of {', '.join(PROFILES)}")
    return tuple(r for r in RULES if fs in r.filesystems)


@dataclass(frozen=True)
class Owed:
    """A fact owed after a point: `path`'s `name` is one of `values`. `rule` owed it at `point`."""

    path: str
    name: str
    values: frozenset
    rule: str
    point: int
    base: frozenset = frozenset()  # the values the rule owed, before later operations added theirs

    def text(self) -> str:
        shown = sorted(map(str, self.values))
        return f"{self.path} {self.name} in {{{', '.join(shown)}}} ({self.rule}, point {self.point})"


@dataclass(frozen=True)
class Held:
    """An owed file or directory that later operations only move: after point `point` it is
    under one of `names` (a rename never leaves it under none). `digest`: a file's contents,
    where they were owed by then and nothing changes them after (else None): what tells it from
    another file that takes one of its names."""

    names: tuple[str, ...]
    kind: str
    rule: str
    point: int
    digest: str | None = None


def end_step(workload: Workload, k: int) -> int:
    """The step after which point k completed (0: the setup's ack 0)."""
    return workload.points()[k - 1] if k else 0


def owed_at(workload: Workload, fs: str, point: int) -> dict:
    """(path, fact) -> (value, rule) that point `point` itself owes (0: the setup's sync; an
    unsynced setup's ack 0 owes nothing)."""
    rules = rules_for(fs)
    if point == 0:
        if "sync-all" not in {r.name for r in rules} or not workload.synced:
            return {}
        return {(p, n): (v, "sync-all") for p, n, v in sync_all(Context(workload, 0, workload.trees[0], None))}
    step = end_step(workload, point)
    trigger, path = trigger_of(workload, step)
    ctx = Context(workload, step, workload.trees[step], path)
    return {(p, n): (v, rule.name) for rule in rules if rule.trigger == trigger for p, n, v in rule.owes(ctx)}


def applied(workload: Workload, fs: str, k: int) -> dict:
    """(path, fact) -> (value, rule, point) as points 0..k leave them."""
    facts = {}
    for point in range(k + 1):
        facts.update({key: (value, rule, point) for key, (value, rule) in owed_at(workload, fs, point).items()})
    return facts


def owed(workload: Workload, fs: str, k: int | None) -> list[Owed]:
    """What a state in which points 0..k completed (the acks it owes) must show; k None: no ack.
    A fact owed at point j accepts the values later operations give it (from j on)."""
    if k is None:
        return []
    workload = on_profile(workload, fs)
    if not 0 <= k <= len(workload.points()):
        raise UsageError(f"{workload.ident} has no persistence point {k}")
    out = []
    for (path, name), (value, rule, point) in applied(workload, fs, k).items():
        later = workload.trees[end_step(workload, point) + 1:]
        owed_values = set(value) if isinstance(value, AnyOf) else {value}
        values = frozenset(owed_values | {fact(t, path, name) for t in later})
        if name in DATA and values - owed_values:  # a later operation changes it: a write may be torn
            continue
        out.append(Owed(path, name, values, rule, point, frozenset(owed_values)))
    return sorted(out, key=lambda o: (name_key(o.path), FIELDS.index(o.name)))


def held(workload: Workload, fs: str, k: int | None) -> list[Held]:
    """The files and directories a point up to k owed by name that the operations after it move
    (or put another file under that name) but never remove."""
    workload = on_profile(workload, fs)
    out = {}
    for point in range(k + 1 if k is not None else 0):
        trees = workload.trees[end_step(workload, point):]
        names_by_ino, facts = {}, None  # worked out once a point: a setup's links are thousands of names of one
        for (path, name), (value, rule) in owed_at(workload, fs, point).items():
            if name != "kind" or value is None or isinstance(value, AnyOf) or trees[0].kind(path) != value:
                continue
            ino = trees[0].paths[path]
            if ino not in names_by_ino:
                names_by_ino[ino] = _names_kept(trees, ino)
            if names_by_ino[ino] is None or all(t.paths.get(path) == ino for t in trees):
                continue
            facts = applied(workload, fs, point) if facts is None else facts
            found = Held(names_by_ino[ino], value, rule, point, _pinned_digest(facts, path, trees, ino))
            out[(found.names, found.kind, found.digest)] = found
    return list(out.values())


def _names_kept(trees: list[Tree], ino: int) -> tuple[str, ...] | None:
    """Every name the inode has in `trees`; None if it has none in one of them."""
    names = [{p for p, i in t.paths.items() if i == ino} for t in trees]
    return tuple(sorted(set().union(*names), key=name_key)) if all(names) else None


def _pinned_digest(facts: dict, path: str, trees: list[Tree], ino: int) -> str | None:
    """The file's digest if the points' `facts` (`applied`) owed it at `path` and no later
    operation changes the file's contents."""
    if trees[0].inodes[ino].kind != FILE:
        return None
    digests = {digest(t.inodes[ino].data) for t in trees}
    owed_then = facts.get((path, "digest"), (None,))[0]
    return owed_then if len(digests) == 1 and owed_then in digests else None
