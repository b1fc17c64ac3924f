"""The eighth table's model (docs/generate.md#the-eighth-table): `again`, a step with no
operation whose point is any persistence point of the tree as it stands, so that it follows the
last step's point directly: a second fsync in a row, an fsync right after a sync (fstests
generic/034, generic/073, generic/690). It changes nothing, in the model tree or on the disk
(unlike `evict`, it does not drop the caches either), so what its point owes is what that point
would owe right after the last one: the oracle's rules as they are, triggered by the call.

It comes only after a step that ended with a point (`Sim.pointed`; the setup's ack 0 counts):
after a step without one, `op; again, P` would be `op, P` under another id. At the first step,
where no operation has touched a name yet and the tree holds nothing, its point names what the
setup makes for it (a directory, or a file and its directory): a point of the setup's names
right after the setup's sync (generic/690), or, unsynced, of names made in the same transaction."""

from plugpull.generate.ops import Persist, Sim
from plugpull.generate.reach import untouched
from plugpull.generate.tree import DIR, DIRS, FILE, FILES

# the step's command: the shell's null command, which does nothing (the reproducer's too)
AGAIN_COMMAND = ": no operation, the point follows the last one"

# at the first step: (point, the name the setup makes for it, its kind)
SETUP_POINTS = tuple([(kind, f, FILE) for f in FILES for kind in ("fsync-any", "fdatasync-any")] +
                     [("fsync-any", d, DIR) for d in DIRS])


def again_points(sim: Sim) -> list[tuple[Persist, Sim]]:
    """(point, the Sim after it) for each point `again` may have on `sim`, in id order: sync,
    then fsync and fdatasync of each file there and fsync of each directory there (the work
    directory first; `reach.untouched`); where no name was touched yet, each of
    `SETUP_POINTS`, its name made by the setup."""
    if sim.known:
        return [(Persist(kind, path), sim) for kind, path in (("sync", None), *untouched(sim.tree, (), ()))]
    out = []
    for kind, path, made in SETUP_POINTS:
        then = sim.copy()
        then.exists(path, (made,))
        out.append((Persist(kind, path), then))
    return out
