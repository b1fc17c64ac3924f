"""The setups a workload may have (`--setup`): synced (ack 0 after a sync), unsynced (ids
`seqNu-...`: the setup in the same transaction as the operations) and links, the many-links
setup (ids `seqNl-...`, `seq6l.links-...`): the synced setup, and before its sync `MANY` more
hard links to `LINKED` in its directory, named as fstests' generic/040 and generic/041 name
theirs (`foo_link_1` ...). Past a few hundred names of one
inode in one directory btrfs keeps them in extended inode refs, which those tests are about.

The links are made only where the setup makes `LINKED` (a workload that creates it, or never
names it, has none) and every step is valid with them (else the workload has none: `rmdir A`
after `unlink A/foo`, which the links keep from being empty; `unlink-open A/foo`, which needs the
last name): so the space's workloads, counts and ids are those of the synced setup, and only the
setup differs. The names are in the setup tree: the oracle owes them, and the inode's link
count, as it owes every synced name."""

from plugpull.generate.ops import INITIAL_SIZE, SETUP_BYTE, Sim, apply
from plugpull.generate.tree import DIR, FILE, Inode, Tree

MANY = 3000  # as generic/040 and 041 make: well past where btrfs's refs spill into extrefs
LINKED = "A/foo"
MARKS = {"synced": "", "unsynced": "u", "links": "l"}  # a setup kind's mark in ids


def link_names(count: int) -> tuple[str, ...]:
    return tuple(f"{LINKED}_link_{i}" for i in range(1, count + 1))


def links_for(setup) -> int:
    """How many extra links the links setup gives a workload whose setup makes `setup` (its
    names), if every step is valid with them (`space.Workload`)."""
    return MANY if LINKED in setup else 0


def setup_tree(names, links: int = 0) -> Tree:
    """The tree the setup makes of `names`, with `links` extra links to `LINKED`."""
    tree = Tree()
    for path in names:
        node = Inode(FILE, bytes([SETUP_BYTE[path]]) * INITIAL_SIZE) if path in SETUP_BYTE else Inode(DIR)
        tree.paths[path] = tree.new_inode(node)
    if links:
        tree.paths.update((name, tree.paths[LINKED]) for name in link_names(links))
    return tree


def link_loop(count: int, at) -> list[str]:
    """The setup's lines that make the links: a loop in the guest's sh. `at`: how the script
    names a path (`program.Tools.at`)."""
    return [f"# {count} more links to {LINKED}, in its directory",
            f'pp_i=1; while [ "$pp_i" -le {count} ]; do ln {at(LINKED)} {at(LINKED)}_link_"$pp_i"; '
            'pp_i=$((pp_i + 1)); done']


def setup_kind(synced: bool, many: bool) -> str:
    return "links" if many else "synced" if synced else "unsynced"


def built(workload) -> tuple[int, list[Tree]]:
    """The links the setup of `workload` (a `space.Workload`) makes and its model trees: the
    links setup's where every step is valid with them (`links_for`), else none."""
    if links := links_for(workload.setup) if workload.many else 0:
        try:
            return links, grown(workload, links)
        except ValueError:
            pass
    return 0, grown(workload, 0)


def grown(workload, links: int) -> list[Tree]:
    """The model tree after the setup (with `links`) and after each operation of `workload`;
    ValueError on a step that is invalid there."""
    sim = Sim(setup_tree(workload.setup, links))
    out = [sim.tree.sealed()]
    for i, step in enumerate(workload.steps, 1):
        if not workload.refuses(step.op) and not apply(sim, step.op, i, lenient=bool(workload.refused)):
            raise ValueError(f"{workload.ident}: step {i} ({step.op.text()}) is invalid")
        sim.pointed = step.persist is not None
        out.append(sim.tree.sealed())
    return out
