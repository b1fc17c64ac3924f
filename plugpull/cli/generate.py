"""`plugpull generate --seq 1|2|3` or `--shape NAME`: the generated workloads (B3/ACE-style),
counted, listed, sampled, and one shown as its guest program or as what its persistence points
owe; `--shapes`: the shapes of longer workloads, counted."""

import argparse

from plugpull.cli.common import EXIT_OK, print_table, whole_option
from plugpull.errors import UsageError
from plugpull.generate.oracle import PROFILES
from plugpull.generate.space import SETUPS
from plugpull.values import COUNT_MAX, SEED_MAX, names, once_each


def fs_option(text: str) -> str:
    """An oracle profile, or a filesystem (a feature profile too: `f2fs+compress`)."""
    from plugpull.testbed.fs import FILESYSTEMS
    if text in PROFILES or text in FILESYSTEMS:
        return text
    raise argparse.ArgumentTypeError(f"expected one of {', '.join(PROFILES)} or a filesystem, not {text!r}")


def seq_option(text: str) -> int:
    if text not in ("1", "2", "3"):
        raise argparse.ArgumentTypeError(f"expected 1, 2 or 3, not {text!r}")
    return int(text)


def shape_option(text: str) -> str:
    from plugpull.generate.shapes import NAMES
    if text not in NAMES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(NAMES)}, not {text!r}")
    return text


def add_space_options(parser, required: bool, seq_help: str) -> None:
    """`--seq N` or `--shape NAME`, one of them."""
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--seq", type=seq_option, help=seq_help)
    group.add_argument("--shape", type=shape_option, help="a shape of four to six operations, each step's "
                       "operations fixed by its place (plugpull generate --shapes lists them)")


def names_option(text: str) -> tuple[str, ...]:
    try:
        return once_each(names(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parsers(sub) -> None:
    g = sub.add_parser("generate", help="the generated workloads: count, list, sample, show one")
    add_space_options(g, False, "core operations per workload: 1, 2 or 3 (with --show: the id's)")
    g.add_argument("--ops", type=names_option, nargs="?", const=(), help="only workloads whose operations and "
                   "persistence points are all of these (e.g. rename,link,fsync,sync); ids stay those of the whole "
                   "space; alone: the names, by table, with their operations and seq-1 workloads")
    g.add_argument("--sample", type=whole_option(1, COUNT_MAX), metavar="K", help="K workloads drawn at random (by --seed)")
    g.add_argument("--seed", type=whole_option(0, SEED_MAX), help="with --sample: the sample's seed (default 1)")
    add_setup_option(g, "(default synced; with --show or --owed: the id's)")
    what = g.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true", help="one line per workload: its id and operations")
    what.add_argument("--show", metavar="ID", help="the workload's guest program (a POSIX sh script)")
    what.add_argument("--owed", metavar="ID", help="what each persistence point of the workload owes, by rule")
    what.add_argument("--shapes", action="store_true", help="the shapes of longer workloads: each one's "
                      "operations, count and the known bugs it is for")
    g.add_argument("--fs", type=fs_option, help="an oracle profile or a filesystem (f2fs+compress): with --owed: "
                   "its rules; with --show and --owed: the operations it refuses not done (default ext4)")
    g.set_defaults(func=cmd_generate)


def add_setup_option(parser, default: str) -> None:
    parser.add_argument("--setup", choices=SETUPS, help="synced: the setup's files are "
                        "made durable by sync before the operations; unsynced: they are created in the same "
                        "transaction as the operations, and ids say so (seqNu-...); links: synced, with 3,000 more "
                        "hard links to A/foo in A where the setup makes it (seqNl-...); xattrs: synced, with 2,000 "
                        "user xattrs on A/foo where the setup makes it (seqNx-...; none on ext4 and f2fs); quota: "
                        "synced, btrfs quotas enabled first (seqNq-...; refused elsewhere); fifo: synced, A/foo a "
                        "fifo where every step is valid with one (seqNf-...: renames, links, unlinks, no point of "
                        "it) " + default)


def _space(args):
    from plugpull.generate.space import space_of
    ident = args.show or args.owed
    if args.seq is None and args.shape is None and ident is None:
        raise UsageError("generate needs --seq 1, 2 or 3, or --shape NAME")
    of_id = space_of(ident) if ident else None
    setup = args.setup or (of_id.setup if of_id else "synced")
    if args.seq is None and args.shape is None:
        return space_of_options(of_id.seq, args.ops, setup, shape=of_id.shape or None)
    return space_of_options(args.seq, args.ops, setup, shape=args.shape)


def space_of_options(seq: int | None, ops, setup: str = "synced", table: int | None = None, shape: str | None = None):
    """The space of `--seq` (or `--shape`) and `--setup`, filtered by `--ops` names (UsageError
    on an unknown one); without them, by `table`: only the operations and points of the first
    `table` tables (a hunt started before the later ones were added goes on with those it had)."""
    from plugpull.generate.ops import FAMILIES, PERSISTENCE, TABLES, up_to
    from plugpull.generate.shapes import shape_named
    from plugpull.generate.space import Space
    unknown = [n for n in ops or () if n not in FAMILIES + PERSISTENCE]
    if unknown:
        raise UsageError(f"unknown --ops name {unknown[0]!r}: expected operations ({', '.join(FAMILIES)}) "
                         f"or persistence points ({', '.join(PERSISTENCE)})")
    had_families, had_points = up_to(table or len(TABLES))
    families = [n for n in ops or () if n not in PERSISTENCE] or had_families
    persistence = [n for n in ops or () if n in PERSISTENCE] or had_points
    if shape:
        named = shape_named(shape)
        return Space(len(named.positions), families, persistence, setup != "unsynced", named, extra_of(setup))
    return Space(seq, families, persistence, synced=setup != "unsynced", extra=extra_of(setup))


def extra_of(setup: str) -> str:
    """A `--setup`'s extra (a synced setup with more, `generate.setups`), or ""."""
    return setup if setup not in ("synced", "unsynced") else ""


def check_sample(space, sample: int | None) -> None:
    """A sample larger than the space is refused, never cut down to it."""
    if sample is not None and sample > space.total():
        raise UsageError(f"--sample {sample}: {space.name} has only {space.total()} workloads "
                         f"{'of those --ops keeps ' if space.filtered else ''}(leave --sample out for every one)")


def cmd_generate(args) -> int:
    if args.fs is not None and not (args.owed or args.show):
        raise UsageError("--fs goes with --owed ID or --show ID: it names whose rules say what is owed, and what "
                         "its filesystem refuses")
    if args.seed is not None and args.sample is None:
        raise UsageError("--seed goes with --sample K: it draws the sample")
    if args.shapes:
        return _print_shapes(args)
    if args.ops == ():
        if args.seq is not None or args.shape or args.show or args.owed or args.list or args.sample is not None:
            raise UsageError("--ops without names lists them; to filter, give it names (--ops rename,fsync)")
        _print_names()
        return EXIT_OK
    space = _space(args)
    if args.show:
        from plugpull.generate.oracle import on_profile
        from plugpull.generate.program import program
        print(program(on_profile(space.parse(args.show), args.fs or "ext4")), end="")
    elif args.owed:
        _print_owed(space.parse(args.owed), args.fs or "ext4")
    elif args.list or args.sample is not None:
        check_sample(space, args.sample)
        seed = 1 if args.seed is None else args.seed
        indexes = space.sample(args.sample, seed) if args.sample is not None else None
        workloads = (space.workload(i) for i in indexes) if indexes is not None else space.workloads()
        for workload in workloads:
            print(f"{workload.ident}  {workload.text()}")
    else:
        which = " (filtered)" if space.filtered else ""
        print(f"{space.name}: {space.total()} workloads{which} of {space.count()}")
    return EXIT_OK


def _print_shapes(args) -> int:
    """Each shape, its length, its count (with `--ops`: those it keeps), and what it is for."""
    from plugpull.generate.shapes import SHAPES
    if args.seq is not None or args.shape is not None or args.sample is not None:
        raise UsageError("--shapes lists every shape: it takes no --seq, --shape or --sample")
    rows = []
    for shape in SHAPES:
        space = space_of_options(None, args.ops, args.setup or "synced", shape=shape.name)
        rows.append((shape.name, len(shape.positions), f"{space.total():,}", shape.why))
    print_table(("shape", "ops", "workloads", "for"), rows)
    return EXIT_OK


def _print_names() -> None:
    """Each operation family and persistence point `--ops` takes, by the table it came with: how
    many operations (rows) a family has, and how many seq-1 workloads `--ops NAME` keeps with
    every point (a family) or with every operation (a point); a family only shapes take last."""
    from plugpull.generate.ops import FAMILIES, OPS, PERSISTENCE, SHAPE_FAMILIES, TABLES
    from plugpull.generate.space import Space
    rows = []
    for table, (families, points) in enumerate(TABLES, 1):
        rows += [(table, f, "operation", sum(op.family == f for op in OPS), Space(1, (f,), PERSISTENCE).total())
                 for f in families]
        rows += [(table, p, "point", "", Space(1, FAMILIES, (p,)).total()) for p in points]
    rows += [("shapes", f, "operation", sum(op.family == f for op in OPS), 0) for f in SHAPE_FAMILIES]  # in no seq
    print_table(("table", "name", "kind", "operations", "seq 1"), rows)


def _print_owed(workload, fs: str) -> None:
    from plugpull.generate.oracle import on_profile, owed, rules_for, rules_of
    rules = {r.name: r.source for r in rules_for(rules_of(fs))}
    print(f"{workload.ident}: {workload.text()}")
    workload = on_profile(workload, fs)
    refused = workload.refused
    if refused:
        print(f"refused on {fs} (EOPNOTSUPP), so not done: {', '.join(sorted(refused))}")
    for k in range(len(workload.points()) + 1):
        print(f"after ack {k} ({'setup' if k == 0 else workload.steps[workload.points()[k - 1] - 1].text()}):")
        rows = [(o.path, o.name, " or ".join(sorted(_short(v) for v in o.values)), o.rule, o.point)
                for o in owed(workload, rules_of(fs), k)]
        if rows:
            print_table(("path", "fact", "owed", "rule", "point"), rows)
        else:
            print("  nothing")
    print(f"rules on {fs}:")
    for name, source in rules.items():
        print(f"  {name}: {source}")


def _short(value) -> str:
    if value is None:
        return "absent"
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    if isinstance(value, tuple) and len(value) > 4:  # a setup's 2,000 xattrs
        return f"{len(value)} xattrs {value[0]} ... {value[-1]}"
    return str(value)
